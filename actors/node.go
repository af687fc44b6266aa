package actors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/persistence"
)

// Node runs operator instances as protoactor actors in one process, with
// their state in one Pebble database.
//
// A Node is created by Start and stopped by Stop. Its methods are safe for
// concurrent use.
type Node struct {
	cfg    Config
	log    *slog.Logger
	system *actor.ActorSystem
	db     *persistence.DB

	table  atomic.Pointer[routeTable]
	queued atomic.Int64 // records sent to instances and not yet processed

	mu       sync.Mutex // guards ops and order; lock order: Node.mu before ingress.mu
	ops      map[string]*operator
	order    []string // operator names in start order
	stopping atomic.Bool

	ingress *ingress

	stopCommit chan struct{}
	commitDone chan struct{}
	stopOnce   sync.Once
	stopErr    error
}

// Start validates the operators, opens the node's database and starts every
// instance. It returns when all instances are running.
func Start(ctx context.Context, cfg Config, factories ...core.Factory) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	metas, err := validateOperators(factories)
	if err != nil {
		return nil, err
	}
	db, err := persistence.Open(cfg.DataDir, persistence.Options{Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("actors: start node %s: %w", cfg.NodeID, err)
	}
	n := &Node{
		cfg:        cfg,
		log:        cfg.Logger.With("node", cfg.NodeID),
		db:         db,
		ops:        make(map[string]*operator),
		stopCommit: make(chan struct{}),
		commitDone: make(chan struct{}),
	}
	n.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		// protoactor logs every recovered panic at Info; supervision is
		// reported by the runtime itself, so keep only protoactor's errors.
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	for i, f := range factories {
		n.ops[metas[i].Name] = newOperator(n, metas[i], f)
		n.order = append(n.order, metas[i].Name)
	}
	n.publishRoutes()
	n.ingress = newIngress(n)
	n.logDanglingInputs()

	for _, name := range n.order {
		if err := n.ops[name].spawn(ctx); err != nil {
			n.abort()
			return nil, fmt.Errorf("actors: start operator %q: %w", name, err)
		}
	}
	for _, name := range n.order {
		n.ops[name].activate()
	}
	go n.commitLoop()
	n.log.Info("node started", "operators", len(n.order), "data_dir", cfg.DataDir)
	return n, nil
}

// validateOperators calls each factory once for its metadata and checks it.
func validateOperators(factories []core.Factory) ([]core.Metadata, error) {
	metas := make([]core.Metadata, len(factories))
	seen := make(map[string]int)
	for i, f := range factories {
		if f == nil {
			return nil, &core.MetadataError{Operator: fmt.Sprintf("#%d", i), Field: "factory", Problem: "is nil"}
		}
		op := f()
		if op == nil {
			return nil, &core.MetadataError{Operator: fmt.Sprintf("#%d", i), Field: "factory", Problem: "returned a nil Operator"}
		}
		m := op.Metadata().WithDefaults()
		if err := m.Validate(); err != nil {
			return nil, err
		}
		if j, dup := seen[m.Name]; dup {
			return nil, &core.MetadataError{Operator: m.Name, Field: "name", Problem: fmt.Sprintf("duplicate: operators #%d and #%d are both named %q", j, i, m.Name)}
		}
		seen[m.Name] = i
		metas[i] = m
	}
	return metas, nil
}

// publishRoutes builds and publishes the route table from the operators.
func (n *Node) publishRoutes() {
	t := &routeTable{streams: make(map[string][]*subscription)}
	if old := n.table.Load(); old != nil {
		t.version = old.version + 1
	} else {
		t.version = 1
	}
	for _, name := range n.order {
		op := n.ops[name]
		for _, in := range op.meta.Inputs {
			t.streams[in.Stream] = append(t.streams[in.Stream], &subscription{
				stream:    in.Stream,
				operator:  name,
				routing:   in.Routing,
				keyGroups: op.meta.KeyGroups,
				pids:      op.pids(),
			})
		}
	}
	n.table.Store(t)
}

// logDanglingInputs logs, once, every input stream that no operator
// produces. Such subscriptions are allowed: records may come from outside
// (Node.Produce) or from an operator deployed later.
func (n *Node) logDanglingInputs() {
	produced := make(map[string]bool)
	for _, op := range n.ops {
		for _, s := range op.meta.Outputs {
			produced[s] = true
		}
		produced[core.DeadLetterStream(op.meta.Name)] = true
	}
	for _, name := range n.order {
		for _, in := range n.ops[name].meta.Inputs {
			if !produced[in.Stream] {
				n.log.Warn("input stream has no producer", "operator", name, "stream", in.Stream)
			}
		}
	}
}

// commitLoop asks every instance to commit its state each CommitInterval.
func (n *Node) commitLoop() {
	defer close(n.commitDone)
	t := time.NewTicker(n.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-n.stopCommit:
			return
		case <-t.C:
			n.mu.Lock()
			for _, op := range n.ops {
				op.broadcast(commitMsg{})
			}
			n.mu.Unlock()
		}
	}
}

// Produce sends rec to stream from outside the runtime, blocking while the
// destinations have no room (backpressure) or until ctx is done. The stream
// must be read by some operator.
func (n *Node) Produce(ctx context.Context, stream string, rec core.Record) error {
	return n.ingress.produce(ctx, stream, rec)
}

// Queued returns the number of records sent to instances on this node and
// not yet processed.
func (n *Node) Queued() int64 { return n.queued.Load() }

// DB returns the node's state database.
func (n *Node) DB() *persistence.DB { return n.db }

// Stop stops the node cleanly: sources stop polling, records in flight are
// processed (until ctx is done), every instance commits its state and the
// database is closed. It is safe to call more than once; later calls return
// the first call's result.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() { n.stopErr = n.stop(ctx) })
	return n.stopErr
}

func (n *Node) stop(ctx context.Context) error {
	n.stopping.Store(true)
	n.ingress.close()

	drainErr := n.drain(ctx)
	close(n.stopCommit)
	<-n.commitDone

	var errs []error
	if drainErr != nil {
		errs = append(errs, drainErr)
	}
	for _, name := range slices.Backward(n.order) {
		if err := n.ops[name].stop(); err != nil {
			errs = append(errs, err)
		}
	}
	n.system.Shutdown()
	if err := n.db.Close(); err != nil {
		errs = append(errs, err)
	}
	n.log.Info("node stopped")
	return errors.Join(errs...)
}

// abort tears down a node whose start failed.
func (n *Node) abort() {
	for _, name := range n.order {
		_ = n.ops[name].stop()
	}
	n.system.Shutdown()
	_ = n.db.Close()
}

// drain waits until no record is queued or buffered anywhere on the node.
// Sources have stopped polling by then (see Node.stopping).
func (n *Node) drain(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if n.queued.Load() == 0 && n.quiescent(ctx) && n.queued.Load() == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("actors: stop: %d records still queued: %w", n.queued.Load(), ctx.Err())
		case <-tick.C:
		}
	}
}

// quiescent asks every instance whether it holds unsent or unprocessed
// records.
func (n *Node) quiescent(ctx context.Context) bool {
	var replies []chan bool
	for _, name := range n.order {
		for _, inst := range n.ops[name].instances {
			ch := make(chan bool, 1)
			n.system.Root.Send(inst.pid, quiesceMsg{reply: ch})
			replies = append(replies, ch)
		}
	}
	all := true
	for _, ch := range replies {
		select {
		case idle := <-ch:
			all = all && idle
		case <-ctx.Done():
			return false
		}
	}
	return all
}

// isStopping reports whether Stop has begun.
func (n *Node) isStopping() bool { return n.stopping.Load() }

// Status returns the state of every operator on the node, in start order.
func (n *Node) Status() []OperatorStatus {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]OperatorStatus, 0, len(n.order))
	for _, name := range n.order {
		out = append(out, n.ops[name].status())
	}
	return out
}
