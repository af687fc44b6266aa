package connect

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// SinkConfig describes a two-phase-commit sink built from Transactions.
type SinkConfig struct {
	// Name is the operator's name; Stream the stream it reads, with
	// Routing.
	Name, Stream string
	Routing      sdk.Routing
	// Parallelism is the number of instances (0: 1); KeyGroups the
	// operator's key groups (0: the runtime's default).
	Parallelism, KeyGroups int
	// StateKey prefixes the sink's state keys (default "connect/"); see
	// TwoPhase.
	StateKey string
	// Open returns the instance's Transactions and its writer's scope
	// (what Recover is given back, such as where it writes), called in
	// Init. Transactions with a `Close(sdk.Context) error` method are
	// closed when the instance stops (discard the open transaction
	// there: its records come again).
	Open func(ctx sdk.Context) (txns Transactions, scope []byte, err error)
}

// Validate reports a configuration that cannot work.
func (c SinkConfig) Validate() error {
	if c.Name == "" || c.Stream == "" || c.Open == nil {
		return fmt.Errorf("%w: sink %q: Name, Stream and Open are required", ErrConfig, c.Name)
	}
	return nil
}

// Sink is the operator NewSink builds. Under exactly-once it is a
// TwoPhase sink: records go to a transaction begun at the first record
// after a barrier, prepared at the barrier (PreCommit) and committed when
// the checkpoint completes (Commit). Under the other guarantees there are
// no checkpoints: Flush, which the runtime calls before each commit of
// state, calls the Transactions' `Flush(sdk.Context) error` if it has one,
// else prepares and commits the open transaction at once (checkpoint 0),
// so what the runtime counts as durable is.
type Sink struct {
	cfg  SinkConfig
	txns Transactions
	tp   TwoPhase
	eo   bool
}

var (
	_ sdk.Committer = (*Sink)(nil)
	_ sdk.Flusher   = (*Sink)(nil)
	_ sdk.Closer    = (*Sink)(nil)
)

// NewSink checks cfg and returns the factory of its operator.
func NewSink(cfg SinkConfig) (sdk.Factory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.StateKey == "" {
		cfg.StateKey = "connect/"
	}
	return func() sdk.Operator { return &Sink{cfg: cfg} }, nil
}

// Metadata implements sdk.Operator.
func (s *Sink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.cfg.Name, Inputs: []sdk.Input{{Stream: s.cfg.Stream, Routing: s.cfg.Routing}},
		Parallelism: s.cfg.Parallelism, KeyGroups: s.cfg.KeyGroups}
}

// Init opens the Transactions and, under exactly-once, recovers (see
// TwoPhase.Init).
func (s *Sink) Init(ctx sdk.Context) error {
	txns, scope, err := s.cfg.Open(ctx)
	if err != nil {
		return fmt.Errorf("sink %q: open: %w", s.cfg.Name, err)
	}
	s.txns = txns
	s.eo = ctx.Instance().Guarantee == sdk.ExactlyOnce
	// The other guarantees keep no transactions in State, but begin and
	// write the same way.
	prefix := s.cfg.StateKey
	if !s.eo {
		s.tp.start(ctx, txns, prefix, scope)
		return nil
	}
	if err := s.tp.Init(ctx, txns, prefix, scope); err != nil {
		return fmt.Errorf("sink %q: %w", s.cfg.Name, err)
	}
	return nil
}

// ProcessRecord writes rec to the open transaction.
func (s *Sink) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	if err := s.tp.Write(ctx, rec); err != nil {
		return fmt.Errorf("sink %q: %w", s.cfg.Name, err)
	}
	return nil
}

// PreCommit implements sdk.Committer (see TwoPhase.PreCommit); under the
// other guarantees it flushes.
func (s *Sink) PreCommit(ctx sdk.Context, checkpoint uint64) error {
	if !s.eo {
		return s.Flush(ctx)
	}
	if err := s.tp.PreCommit(ctx, checkpoint); err != nil {
		return fmt.Errorf("sink %q: checkpoint %d: pre-commit: %w", s.cfg.Name, checkpoint, err)
	}
	return nil
}

// Commit implements sdk.Committer (see TwoPhase.Commit); under the other
// guarantees it does nothing.
func (s *Sink) Commit(ctx sdk.Context, checkpoint uint64) error {
	if !s.eo {
		return nil
	}
	if err := s.tp.Commit(ctx, checkpoint); err != nil {
		return fmt.Errorf("sink %q: checkpoint %d: %w", s.cfg.Name, checkpoint, err)
	}
	return nil
}

// Flush implements sdk.Flusher. Under exactly-once it does nothing
// (PreCommit makes the records durable at the barrier); otherwise see
// Sink.
func (s *Sink) Flush(ctx sdk.Context) error {
	if s.eo || s.txns == nil {
		return nil
	}
	if f, ok := s.txns.(interface{ Flush(sdk.Context) error }); ok {
		return f.Flush(ctx)
	}
	if !s.tp.open {
		return nil
	}
	handle, err := s.txns.PreCommit(ctx, 0)
	if err != nil {
		return fmt.Errorf("sink %q: flush: %w", s.cfg.Name, err)
	}
	s.tp.open = false
	if err := s.txns.Commit(ctx, Txn{Writer: s.tp.writer, Handle: handle}); err != nil {
		return fmt.Errorf("sink %q: flush: %w", s.cfg.Name, err)
	}
	return nil
}

// Close closes the Transactions if they have a Close method.
func (s *Sink) Close(ctx sdk.Context) error {
	c, ok := s.txns.(interface{ Close(sdk.Context) error })
	s.txns = nil
	if !ok {
		return nil
	}
	if err := c.Close(ctx); err != nil {
		return fmt.Errorf("sink %q: close: %w", s.cfg.Name, err)
	}
	return nil
}

// ProcessTimer implements sdk.Operator; the sink sets no timers.
func (s *Sink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
