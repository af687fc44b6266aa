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
	"github.com/asynkron/protoactor-go/remote"

	"github.com/sluicehq/sluice/actors/ckpt"
	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/actors/handoff"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/actors/tail"
	"github.com/sluicehq/sluice/actors/transport"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/topology"
)

// Node runs operator instances as protoactor actors in one process, with
// their state in one Pebble database. Alone (the embedded mode) it runs
// every instance; in a cluster it runs the instances that placement gives
// it and exchanges records and state with the other nodes.
//
// A Node is created by Start and stopped by Stop. Its methods are safe for
// concurrent use.
type Node struct {
	cfg         Config
	log         *slog.Logger
	system      *actor.ActorSystem
	remote      *remote.Remote // nil when embedded
	transport   *transport.TLS // nil without transport TLS
	db          *persistence.DB
	store       topology.Store
	addr        string // actor address of this node
	incarnation string // this process's, in its member record (see metaIncarnation)
	kinds       map[string]core.Factory

	table    atomic.Pointer[flow.Table]
	topo     atomic.Pointer[topology.Topology] // as last applied by the coordinator
	queued   atomic.Int64                      // records delivered to instances here and not yet processed
	streams  streamStats                       // records of streams with no reader
	dlLog    status.DeadLetters                // the latest dead letters per operator, to show
	arrivals atomic.Int64                      // record batches that reached this node, delivered or bounced
	gen      atomic.Uint64                     // rollback generation (rollback.go)
	base     atomic.Pointer[checkpoint.Meta]   // what instances restore from when activated without handed-over state
	dead     atomic.Pointer[[]string]          // actor addresses of processes seen crash, newest last (rollback.go)
	restorer *ckpt.Restorer

	misaddressed transport.Misaddressed // messages refused for another process (actors/transport/addressing.go)

	coord     *actor.PID
	coordImpl *handoff.Coordinator
	ckpt      *actor.PID // the checkpointer (package actors/ckpt); nil without checkpoints
	ingress   *ingress
	tails     *tail.Registry // open subscriptions (subscribe.go)

	mu   sync.Mutex // guards ops and byID; a leaf (LOCKS.md)
	ops  map[string]*operator
	byID map[string]*instance // every instance here, by actor id

	health  *status.Monitor // the node's health (reporting.go)
	journal *status.Journal // the node's recent cluster events (Events)

	stopping atomic.Bool
	life     context.Context // cancelled by Stop: blocking calls of the node's actors end
	wg       sync.WaitGroup  // goroutines started with goFunc
	timers   nodeTimers      // delayed self-messages (afterFunc), stopped by Stop
	cancel   context.CancelFunc
	stopOnce sync.Once
	stopErr  error
}

// Start validates the operators, opens the node's database and starts the
// node. Every operator's kind is its name. Without cfg.Cluster the node runs
// every instance itself; with it, the node joins the cluster and runs its
// share.
//
// The operators are also deployed (seeded into the node's topology store)
// unless they were deployed before: see topology.Topology.Seed.
func Start(ctx context.Context, cfg Config, factories ...core.Factory) (*Node, error) {
	kinds, seed, err := Kinds(factories...)
	if err != nil {
		return nil, err
	}
	return StartNode(ctx, cfg, kinds, seed)
}

// Kinds validates operator factories and returns them by kind (each
// operator's name is its kind) with the spec of each operator as its
// metadata declares it, for StartNode.
func Kinds(factories ...core.Factory) (map[string]core.Factory, []topology.OperatorSpec, error) {
	kinds, topo, err := fromFactories(factories)
	return kinds, topo.Operators, err
}

// fromFactories derives kinds and a topology from operator factories.
func fromFactories(factories []core.Factory) (map[string]core.Factory, topology.Topology, error) {
	kinds := make(map[string]core.Factory)
	var topo topology.Topology
	for i, f := range factories {
		if f == nil {
			return nil, topology.Topology{}, &core.MetadataError{Operator: fmt.Sprintf("#%d", i), Field: "factory", Problem: "is nil"}
		}
		op := f()
		if op == nil {
			return nil, topology.Topology{}, &core.MetadataError{Operator: fmt.Sprintf("#%d", i), Field: "factory", Problem: "returned a nil Operator"}
		}
		m := op.Metadata().WithDefaults()
		if err := m.Validate(); err != nil {
			return nil, topology.Topology{}, err
		}
		if _, dup := kinds[m.Name]; dup {
			for j, o := range topo.Operators {
				if o.Meta.Name == m.Name {
					return nil, topology.Topology{}, &core.MetadataError{Operator: m.Name, Field: "name", Problem: fmt.Sprintf("duplicate: operators #%d and #%d are both named %q", j, i, m.Name)}
				}
			}
		}
		kinds[m.Name] = f
		topo.Operators = append(topo.Operators, topology.OperatorSpec{Kind: m.Name, Meta: m})
	}
	topo.Version = 1
	return kinds, topo, nil
}

// StartNode starts a node that can host the given kinds. It first deploys
// the seed operators that were never deployed before (Topology.Seed), then
// runs whatever the topology store holds, following its changes.
func StartNode(ctx context.Context, cfg Config, kinds map[string]core.Factory, seed []topology.OperatorSpec) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := (topology.Topology{Operators: seed}).Validate(); err != nil {
		return nil, err
	}
	if cfg.Checkpoints != nil {
		for _, spec := range seed {
			if f := kinds[spec.Kind]; f != nil {
				if err := core.CheckGuarantee(f(), core.ExactlyOnce); err != nil {
					return nil, fmt.Errorf("actors: start node %s: %w", cfg.NodeID, err)
				}
			}
		}
	}
	if len(cfg.Host) > 0 {
		hosted := make(map[string]core.Factory)
		for _, k := range cfg.Host {
			f := kinds[k]
			if f == nil {
				return nil, fmt.Errorf("actors: host kind %q: no such operator kind (have %v)", k, sortedKinds(kinds))
			}
			hosted[k] = f
		}
		kinds = hosted
	}
	if cfg.Store == nil && cfg.LocalStore == nil {
		return nil, fmt.Errorf("actors: start node %s: Config.Store or Config.LocalStore is required (pass topology/pebble.Local as LocalStore for the embedded mode)", cfg.NodeID)
	}
	db, err := persistence.Open(cfg.DataDir, persistence.Options{Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("actors: start node %s: %w", cfg.NodeID, err)
	}
	life, cancel := context.WithCancel(context.Background())
	n := &Node{
		life:   life,
		cancel: cancel,
		cfg:    cfg,
		log:    cfg.Logger.With("node", cfg.NodeID),
		db:     db,
		kinds:  kinds,
		ops:    make(map[string]*operator),
		byID:   make(map[string]*instance),
	}
	if cc := cfg.Checkpoints; cc != nil && cc.Store != nil {
		n.restorer = ckpt.NewRestorer(cfg.DataDir, cfg.NodeID, cc.Store, cc.Timeout)
	} else {
		n.restorer = ckpt.NewRestorer(cfg.DataDir, cfg.NodeID, nil, 0)
	}
	n.tails = tail.NewRegistry(cfg.NodeID, tailNode{n})
	n.incarnation = newIncarnation() // before anything addresses replies (replyTo)
	n.health = status.NewMonitor(cfg.DataDir, cfg.MinFreeDisk, db, n.log, healthNode{n})
	n.journal = status.NewJournal(cfg.NodeID, cfg.OnEvent)
	n.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		// protoactor logs every recovered panic at Info; supervision is
		// reported by the runtime itself.
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	if cfg.Cluster != nil {
		if err := n.startRemote(); err != nil {
			if n.transport != nil {
				n.transport.Close()
			}
			n.system.Shutdown()
			_ = db.Close()
			return nil, err
		}
	}
	n.addr = n.system.Address()
	n.store = cfg.Store
	if n.store == nil {
		n.store = cfg.LocalStore(db)
	}
	topo, err := n.seed(ctx, seed)
	if err == nil {
		topo, err = topology.Update(ctx, n.store, 20, n.tails.Without) // left by a crash
	}
	if err != nil {
		if n.remote != nil {
			n.remote.Shutdown(false)
		}
		if n.transport != nil {
			n.transport.Close()
		}
		n.system.Shutdown()
		_ = db.Close()
		return nil, err
	}
	if _, err := n.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return dispatcher{n} }), dispatcherName); err != nil {
		n.abort()
		return nil, fmt.Errorf("actors: start dispatcher: %w", err)
	}
	n.ingress = newIngress(n)
	if cfg.Checkpoints != nil {
		if err := n.startCheckpointer(ctx); err != nil {
			n.abort()
			return nil, err
		}
	}
	if err := n.startCoordinator(topo); err != nil {
		n.abort()
		return nil, fmt.Errorf("actors: start coordinator: %w", err)
	}
	n.logDanglingInputs(topo)

	self := cluster.Member{ID: cfg.NodeID, Address: n.addr, Kinds: append(append(append(sortedKinds(kinds), cfg.Announce...), cfg.runtimeKinds()...), n.tails.Kind()),
		Meta: map[string]string{metaIncarnation: n.incarnation}}
	runCtx := n.life
	topoCh := n.store.Watch(runCtx)
	n.goFunc(func() {
		for t := range topoCh {
			n.system.Root.Send(n.coord, handoff.TopologyChanged{Topo: t})
		}
	})
	if cfg.Cluster == nil {
		n.system.Root.Send(n.coord, handoff.Membership{Members: []cluster.Member{self}})
	} else if err := n.joinCluster(ctx, runCtx, self); err != nil {
		n.abort()
		return nil, err
	}
	select {
	case <-n.coordImpl.Ready():
	case <-ctx.Done():
		n.abort()
		return nil, fmt.Errorf("actors: start node %s: %w", cfg.NodeID, ctx.Err())
	}
	n.goFunc(func() { n.commitLoop(runCtx) })
	n.goFunc(func() { n.health.Watch(runCtx, n.cfg.DiskCheckInterval) })
	n.log.Info("node started", "address", n.addr, "data_dir", cfg.DataDir, "kinds", len(kinds))
	return n, nil
}

// seed deploys the seed operators not deployed before and returns the
// topology to start with.
func (n *Node) seed(ctx context.Context, seed []topology.OperatorSpec) (topology.Topology, error) {
	if len(seed) > 0 {
		_, err := topology.Update(ctx, n.store, 20, func(t topology.Topology) (topology.Topology, error) {
			next, changed, err := t.Seed(seed, time.Now())
			if err != nil || !changed {
				return t, err
			}
			return next, nil
		})
		if err != nil {
			return topology.Topology{}, fmt.Errorf("actors: deploy the program's operators: %w", err)
		}
	}
	t, err := n.store.Load(ctx)
	if err != nil {
		return topology.Topology{}, fmt.Errorf("actors: load topology: %w", err)
	}
	return t, nil
}

// Store returns the node's topology store.
func (n *Node) Store() topology.Store { return n.store }

// Kinds returns the operator kinds this node hosts, sorted.
func (n *Node) Kinds() []string { return sortedKinds(n.kinds) }

// KindMetadata returns the metadata a hosted kind declares, with defaults.
func (n *Node) KindMetadata(kind string) (core.Metadata, bool) {
	f := n.kinds[kind]
	if f == nil {
		return core.Metadata{}, false
	}
	return f().Metadata().WithDefaults(), true
}

// CheckKind reports whether an operator named name of a hosted kind can run
// under the node's guarantee (core.CheckGuarantee): nil when it can or when
// the node does not host the kind.
func (n *Node) CheckKind(name, kind string) error {
	f := n.kinds[kind]
	if f == nil {
		return nil
	}
	if err := core.CheckGuarantee(f(), n.guarantee()); err != nil {
		var ge *core.GuaranteeError
		if errors.As(err, &ge) {
			ge.Operator = name
		}
		return err
	}
	return nil
}

// Topology returns the topology the node currently runs.
func (n *Node) Topology() topology.Topology { return n.topology() }

// joinCluster registers the node and feeds membership to the coordinator.
func (n *Node) joinCluster(ctx, runCtx context.Context, self cluster.Member) error {
	cc := n.cfg.Cluster
	self.HTTPAddr = cc.HTTPAddr
	self.Version = cc.Version
	if err := cc.Discovery.Join(runCtx, self); err != nil {
		return fmt.Errorf("actors: join cluster: %w", err)
	}
	ch := cc.Discovery.Watch(runCtx)
	n.goFunc(func() {
		for members := range ch {
			if n.transport != nil {
				n.transport.SetMembers(members)
			}
			n.system.Root.Send(n.coord, handoff.Membership{Members: members})
		}
	})
	if lr, ok := cc.Discovery.(cluster.LapseReporter); ok {
		n.goFunc(func() {
			select {
			case <-lr.Lapsed():
				n.fence("this node's membership lapsed (it did not run for longer than the membership TTL): the others dropped it and took over its work")
			case <-runCtx.Done():
			}
		})
	}
	return nil
}

// sortedKinds returns the kind names.
func sortedKinds(kinds map[string]core.Factory) []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// operator returns the operator of spec on this node, creating its
// supervisor on first use.
func (n *Node) operator(spec topology.OperatorSpec) (*operator, error) {
	name, kind := spec.Meta.Name, spec.Kind
	n.mu.Lock()
	defer n.mu.Unlock()
	if op := n.ops[name]; op != nil {
		return op, nil
	}
	f := n.kinds[kind]
	if kind == n.tails.Kind() {
		f = n.tails.Reader
	}
	if mf := n.cfg.Runtimes[spec.Meta.Runtime]; f == nil && kind == core.WasmKind && spec.Meta.Runtime == core.RuntimeWasm && mf != nil {
		var err error
		if f, err = mf(spec.Meta); err != nil {
			return nil, fmt.Errorf("actors: operator %q of runtime %s: %w", name, spec.Meta.Runtime, err)
		}
	}
	if f == nil {
		return nil, fmt.Errorf("actors: node %s has no operator kind %q", n.cfg.NodeID, kind)
	}
	op, err := newOperator(n, name, f)
	if err != nil {
		return nil, err
	}
	n.ops[name] = op
	return op, nil
}

// lookup returns the instance with actor id id, or nil.
func (n *Node) lookup(id string) *instance {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.byID[id]
}

// register adds or removes an instance from the id index.
func (n *Node) register(inst *instance, add bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if add {
		n.byID[inst.pid.Id] = inst
	} else {
		delete(n.byID, inst.pid.Id)
	}
}

// goFunc runs f on a goroutine that Stop waits for.
func (n *Node) goFunc(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// nodeTimers are the node's pending afterFunc timers.
type nodeTimers struct {
	mu      sync.Mutex
	pending map[*time.Timer]struct{}
	stopped bool
}

// afterFunc runs f after d on its own goroutine, unless the node stops
// first. It is for the runtime's delayed self-messages (retries, settle
// delays), so that none fires into a stopped actor system.
func (n *Node) afterFunc(d time.Duration, f func()) {
	ts := &n.timers
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.stopped {
		return
	}
	if ts.pending == nil {
		ts.pending = make(map[*time.Timer]struct{})
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		ts.mu.Lock()
		_, live := ts.pending[t]
		delete(ts.pending, t)
		ts.mu.Unlock()
		if live {
			f()
		}
	})
	ts.pending[t] = struct{}{}
}

// stopTimers cancels every pending afterFunc; later calls do nothing.
func (n *Node) stopTimers() {
	ts := &n.timers
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.stopped = true
	for t := range ts.pending {
		t.Stop()
	}
	clear(ts.pending)
}

// logDanglingInputs logs, once, every input stream that no operator
// produces. Such subscriptions are allowed: records may come from outside
// (Node.Produce) or from an operator deployed later.
func (n *Node) logDanglingInputs(topo topology.Topology) {
	produced := make(map[string]bool)
	for _, op := range topo.Operators {
		for _, s := range op.Meta.Outputs {
			produced[s] = true
		}
		produced[core.DeadLetterStream(op.Meta.Name)] = true
	}
	for _, op := range topo.Operators {
		for _, in := range op.Meta.Inputs {
			if !produced[in.Stream] {
				n.log.Warn("input stream has no producer", "operator", op.Meta.Name, "stream", in.Stream)
			}
		}
	}
}

// commitLoop asks every instance to commit its state each CommitInterval.
func (n *Node) commitLoop(ctx context.Context) {
	t := time.NewTicker(n.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, inst := range n.instances() {
				n.system.Root.Send(inst.pid, commitMsg{})
			}
		}
	}
}

// instances returns every instance on this node.
func (n *Node) instances() []*instance {
	n.mu.Lock()
	ops := make([]*operator, 0, len(n.ops))
	for _, op := range n.ops {
		ops = append(ops, op)
	}
	n.mu.Unlock()
	var out []*instance
	for _, op := range ops {
		out = append(out, op.list()...)
	}
	return out
}

// Produce sends rec to stream from outside the runtime. It returns once rec
// is sent or buffered, blocking while a destination's buffer is full
// (backpressure: that reader has Credits batches unacknowledged and
// BufferBatches×BatchSize records waiting) or until ctx is done; buffered
// records are delivered as credit returns, and by Stop. The stream must be
// read by some operator.
func (n *Node) Produce(ctx context.Context, stream string, rec core.Record) error {
	return n.ingress.produce(ctx, stream, rec)
}

// Queued returns the number of records delivered to instances on this node
// and not yet processed.
func (n *Node) Queued() int64 { return n.queued.Load() }

// Buffered returns the number of records produced on this node that wait
// in output buffers (for credit, or for a moved instance's new owner).
func (n *Node) Buffered() int64 {
	var sum int64
	for _, inst := range n.instances() {
		sum += inst.pub.buffered.Load()
	}
	return sum
}

// DB returns the node's state database.
func (n *Node) DB() *persistence.DB { return n.db }

// Address returns the node's actor address.
func (n *Node) Address() string { return n.addr }

// ID returns the node's id.
func (n *Node) ID() string { return n.cfg.NodeID }

// Stop stops the node cleanly. In a cluster it first leaves: the other
// nodes take over its instances and their state (until ctx is done). Then
// sources stop polling, records in flight here are processed (until ctx is
// done), every instance commits its state and the database is closed. It is
// safe to call more than once; later calls return the first call's result.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() { n.stopErr = n.stop(ctx) })
	return n.stopErr
}

func (n *Node) stop(ctx context.Context) error {
	var errs []error
	if err := n.tails.CloseAll(ctx); err != nil { // no other node hosts their readers
		errs = append(errs, err)
	}
	// The last node of an exactly-once pipeline (or an embedded one) takes
	// a final checkpoint once everything in flight is processed, so that
	// what its sinks prepared is committed and a restart resumes exactly
	// here; it has nobody to hand its instances to. Other nodes hand them
	// over (leave) instead.
	final := n.cfg.Checkpoints != nil && n.alone(ctx)
	if n.cfg.Cluster != nil && !final {
		if err := n.leave(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	n.stopping.Store(true)
	n.ingress.close()
	if err := n.drain(ctx); err != nil {
		errs = append(errs, err)
	}
	if final {
		if id, err := n.Checkpoint(ctx); err != nil {
			errs = append(errs, fmt.Errorf("actors: stop: final checkpoint: %w", err))
		} else if err := n.commitSinks(ctx, id); err != nil {
			errs = append(errs, fmt.Errorf("actors: stop: final checkpoint: %w", err))
		}
		if n.cfg.Cluster != nil {
			if err := n.leave(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	n.cancel()
	if n.cfg.Cluster != nil {
		lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := n.cfg.Cluster.Discovery.Leave(lctx); err != nil {
			errs = append(errs, fmt.Errorf("actors: leave discovery: %w", err))
		}
		cancel()
	}
	n.mu.Lock()
	ops := make([]*operator, 0, len(n.ops))
	for _, op := range n.ops {
		ops = append(ops, op)
	}
	n.mu.Unlock()
	for _, op := range ops {
		if err := op.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if n.ckpt != nil {
		_ = n.system.Root.StopFuture(n.ckpt).Wait()
	}
	_ = n.system.Root.StopFuture(n.coord).Wait()
	n.stopTimers()
	n.wg.Wait()
	if err := n.saveHeld(); err != nil {
		errs = append(errs, err)
	}
	if n.remote != nil {
		n.remote.Shutdown(false)
	}
	if n.transport != nil {
		n.transport.Close()
	}
	n.system.Shutdown()
	if err := n.db.Close(); err != nil {
		errs = append(errs, err)
	}
	n.log.Info("node stopped")
	return errors.Join(errs...)
}

// leave hands every local instance over to the other nodes: it announces
// that this node is leaving, then waits until it holds no state and runs no
// instance, every instance here (released ones too) has had its output
// delivered and acknowledged, and no batch has arrived for LeaveQuiet (a
// batch that arrives for a released instance is bounced, and the bounce
// must get out before the node does).
func (n *Node) leave(ctx context.Context) error {
	n.system.Root.Send(n.coord, handoff.Leave{})
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	quietSince, arrivals := time.Time{}, int64(-1)
	for {
		st, err := n.coordState(ctx)
		if err != nil {
			return fmt.Errorf("actors: leave: %w", err)
		}
		others := len(st.Members) > 1
		if st.LocalActive == 0 && st.LocalWaiting == 0 && (st.HeldGroups == 0 || !others) && n.queued.Load() == 0 && n.quiescent(ctx) {
			if a := n.arrivals.Load(); quietSince.IsZero() || a != arrivals {
				quietSince, arrivals = time.Now(), a
			} else if time.Since(quietSince) >= n.cfg.Cluster.LeaveQuiet {
				return nil
			}
		} else {
			quietSince = time.Time{}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("actors: leave: %d key groups not handed off, %d instances still here: %w", st.HeldGroups, st.LocalActive+st.LocalWaiting, ctx.Err())
		case <-tick.C:
		}
	}
}

// coordState asks the coordinator for a snapshot.
func (n *Node) coordState(ctx context.Context) (handoff.State, error) {
	reply := make(chan handoff.State, 1)
	n.system.Root.Send(n.coord, handoff.StateRequest{Reply: reply})
	select {
	case s := <-reply:
		return s, nil
	case <-ctx.Done():
		return handoff.State{}, ctx.Err()
	}
}

// abort tears down a node whose start failed.
func (n *Node) abort() {
	if n.cancel != nil {
		n.cancel()
	}
	if n.ckpt != nil {
		_ = n.system.Root.StopFuture(n.ckpt).Wait()
	}
	if n.coord != nil {
		_ = n.system.Root.StopFuture(n.coord).Wait()
	}
	n.stopTimers()
	n.wg.Wait()
	if n.remote != nil {
		n.remote.Shutdown(false)
	}
	if n.transport != nil {
		n.transport.Close()
	}
	n.system.Shutdown()
	_ = n.db.Close()
}

// drain waits until no record is queued or buffered on the node. Sources
// have stopped polling by then (see Node.stopping). Every 10 s it logs
// what it still waits for.
func (n *Node) drain(ctx context.Context) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	nextLog := time.Now().Add(10 * time.Second)
	for {
		if n.queued.Load() == 0 {
			busy := n.busy(ctx)
			if len(busy) == 0 && n.queued.Load() == 0 {
				return nil
			}
			if time.Now().After(nextLog) {
				nextLog = time.Now().Add(10 * time.Second)
				n.log.Warn("stop waits for instances that still hold records", "instances", busy)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("actors: stop: %d records still queued: %w", n.queued.Load(), ctx.Err())
		case <-tick.C:
		}
	}
}

// quiescent reports whether no instance holds unsent or unprocessed
// records.
func (n *Node) quiescent(ctx context.Context) bool { return len(n.busy(ctx)) == 0 }

// busy asks the ingress and every instance whether they hold unsent or
// unprocessed records and returns what those that do hold (all of them, as
// unknown, if ctx ends first).
func (n *Node) busy(ctx context.Context) []string {
	insts := n.instances()
	replies := make([]chan string, len(insts))
	for k, inst := range insts {
		replies[k] = make(chan string, 1)
		n.system.Root.Send(inst.pid, quiesceMsg{reply: replies[k]})
	}
	var out []string
	if held := n.ingress.quiet(); held != "" {
		out = append(out, held)
	}
	for k, ch := range replies {
		select {
		case held := <-ch:
			if held != "" {
				out = append(out, held)
			}
		case <-ctx.Done():
			return append(out, fmt.Sprintf("%s: no answer (%v)", insts[k].key, ctx.Err()))
		}
	}
	return out
}

// isStopping reports whether Stop has begun.
func (n *Node) isStopping() bool { return n.stopping.Load() }

// topology returns the topology the coordinator last applied.
func (n *Node) topology() topology.Topology {
	if t := n.topo.Load(); t != nil {
		return *t
	}
	return topology.Topology{}
}

// Pending describes what the node is waiting for: instances placed here
// that wait for their state, and from which nodes.
func (n *Node) Pending(ctx context.Context) ([]string, error) {
	st, err := n.coordState(ctx)
	if err != nil {
		return nil, err
	}
	return st.Pending, nil
}

// Members returns the node's current view of the cluster.
func (n *Node) Members(ctx context.Context) ([]cluster.Member, error) {
	st, err := n.coordState(ctx)
	if err != nil {
		return nil, err
	}
	return st.Members, nil
}
