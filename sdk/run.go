package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/actors"
)

// Config configures the embedded runtime. The zero value runs with a data
// directory "./sluice-data", the default logger and a 200 ms commit
// interval.
type Config struct {
	// NodeID names this process in logs and status; empty means the host name.
	NodeID string
	// DataDir holds the Pebble database with every operator's state.
	DataDir string
	// Logger receives the runtime's logs; nil means slog.Default().
	Logger *slog.Logger
	// CommitInterval bounds how long state writes stay uncommitted; 0 means 200 ms.
	CommitInterval time.Duration
	// BatchSize and Credits tune batching and backpressure; see
	// actors.Config. 0 means the defaults (256 records, 8 batches).
	BatchSize, Credits int
	// NoSync commits state without fsync (tests, benchmarks).
	NoSync bool
	// StopTimeout bounds how long Run waits for in-flight records on
	// shutdown; 0 means 10 s.
	StopTimeout time.Duration
}

func (c Config) node() actors.Config {
	return actors.Config{
		NodeID:         c.NodeID,
		DataDir:        c.DataDir,
		Logger:         c.Logger,
		CommitInterval: c.CommitInterval,
		BatchSize:      c.BatchSize,
		Credits:        c.Credits,
		NoSync:         c.NoSync,
	}
}

// Runtime is a running set of operators in this process.
type Runtime struct {
	node *actors.Node
}

// Start validates the operators' metadata and starts them. Invalid metadata
// fails with a *MetadataError naming the operator and the field.
func Start(ctx context.Context, cfg Config, operators ...Factory) (*Runtime, error) {
	if len(operators) == 0 {
		return nil, errors.New("sdk: start: no operators given")
	}
	n, err := actors.Start(ctx, cfg.node(), operators...)
	if err != nil {
		return nil, err
	}
	return &Runtime{node: n}, nil
}

// Produce sends rec to stream from outside any operator, blocking while the
// readers of the stream are busy (backpressure) or until ctx is done.
func (r *Runtime) Produce(ctx context.Context, stream string, rec Record) error {
	return r.node.Produce(ctx, stream, rec)
}

// Status describes every operator and instance.
func (r *Runtime) Status() []OperatorStatus { return r.node.Status() }

// Node returns the underlying runtime node.
func (r *Runtime) Node() *actors.Node { return r.node }

// Stop stops sources, lets in-flight records finish (until ctx is done),
// commits all state and closes the database. It is safe to call twice.
func (r *Runtime) Stop(ctx context.Context) error { return r.node.Stop(ctx) }

// Run starts the operators and runs them until ctx is cancelled or the
// process receives SIGINT or SIGTERM, then stops cleanly.
func Run(ctx context.Context, cfg Config, operators ...Factory) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rt, err := Start(ctx, cfg, operators...)
	if err != nil {
		return err
	}
	<-ctx.Done()
	timeout := cfg.StopTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := rt.Stop(sctx); err != nil {
		return fmt.Errorf("sdk: stop: %w", err)
	}
	return nil
}
