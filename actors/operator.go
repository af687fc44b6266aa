package actors

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/ckpt"
	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/placement"
	"github.com/sluicehq/sluice/topology"
)

// operator is one operator on this node: its factory, its supervisor actor
// and the instances of it that live here (of any layout epoch, in any mode).
type operator struct {
	node    *Node
	name    string
	factory core.Factory
	supPID  *actor.PID

	mu        sync.Mutex // guards instances and backoff
	instances map[instKey]*instance
	backoff   map[*time.Timer]struct{}
}

// newOperator spawns the operator's supervisor.
func newOperator(n *Node, name string, f core.Factory) (*operator, error) {
	op := &operator{
		node:      n,
		name:      name,
		factory:   f,
		instances: make(map[instKey]*instance),
		backoff:   make(map[*time.Timer]struct{}),
	}
	props := actor.PropsFromProducer(func() actor.Actor { return &supervisorActor{op: op} },
		actor.WithSupervisor(&restartStrategy{op: op}))
	pid, err := n.system.Root.SpawnNamed(props, "op/"+name)
	if err != nil {
		return nil, fmt.Errorf("actors: spawn supervisor of %q: %w", name, err)
	}
	op.supPID = pid
	return op, nil
}

// spawn creates instance index of spec under the supervisor, in awaiting
// mode, and returns it once its actor exists.
func (op *operator) spawn(ctx context.Context, spec topology.OperatorSpec, index int) (*instance, error) {
	m := spec.Meta
	lo, hi := placement.GroupRange(index, m.KeyGroups, m.Parallelism)
	key := instKey{op: m.Name, epoch: spec.Epoch, index: index}
	inst := newInstance(op, spec, key, lo, hi, actor.NewPID(op.node.addr, key.pidID()))
	if err := op.start(ctx, inst); err != nil {
		return nil, err
	}
	return inst, nil
}

// start creates the actor of inst, made by newInstance, and adds it to the
// operator's instances.
func (op *operator) start(ctx context.Context, inst *instance) error {
	done := make(chan error, 1)
	op.node.system.Root.Send(op.supPID, spawnMsg{inst: inst, done: done})
	select {
	case err := <-done:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	op.mu.Lock()
	op.instances[inst.key] = inst
	op.mu.Unlock()
	op.node.register(inst, true)
	// A rollback that began after newInstance read the generation and
	// listed the node's instances before this one was added did not reset
	// it: it would wait for its state in the old generation, and ignore
	// its activation in the new one. The generation is stored before the
	// list is taken, so read after the add it is the new one.
	if g := op.node.gen.Load(); g != inst.ck.gen {
		op.node.system.Root.Send(inst.pid, ckpt.Reset{Gen: g})
	}
	return nil
}

// remove stops an instance's actor and forgets it.
func (op *operator) remove(inst *instance) {
	op.node.register(inst, false)
	op.mu.Lock()
	delete(op.instances, inst.key)
	op.mu.Unlock()
	_ = op.node.system.Root.StopFuture(inst.pid).Wait()
}

// list returns the instances, in no particular order.
func (op *operator) list() []*instance {
	op.mu.Lock()
	defer op.mu.Unlock()
	out := make([]*instance, 0, len(op.instances))
	for _, inst := range op.instances {
		out = append(out, inst)
	}
	return out
}

// stop stops the supervisor and its instances, which commit their state.
func (op *operator) stop() error {
	op.mu.Lock()
	for t := range op.backoff {
		t.Stop()
	}
	clear(op.backoff)
	op.mu.Unlock()
	if err := op.node.system.Root.StopFuture(op.supPID).Wait(); err != nil {
		return fmt.Errorf("actors: stop operator %q: %w", op.name, err)
	}
	for _, inst := range op.list() {
		if err := inst.closeErr(); err != nil {
			return fmt.Errorf("actors: stop operator %q: %w", op.name, err)
		}
	}
	return nil
}

// instanceByPID finds the instance with the given PID.
func (op *operator) instanceByPID(pid *actor.PID) *instance {
	op.mu.Lock()
	defer op.mu.Unlock()
	for _, inst := range op.instances {
		if inst.pid.Id == pid.Id {
			return inst
		}
	}
	return nil
}

// supervisorActor is the parent of an operator's instances on a node.
type supervisorActor struct{ op *operator }

// Receive spawns instances on request.
func (s *supervisorActor) Receive(ctx actor.Context) {
	msg, ok := ctx.Message().(spawnMsg)
	if !ok {
		return
	}
	k := msg.inst.key
	_, err := ctx.SpawnNamed(actor.PropsFromProducer(msg.inst.newIncarnation), fmt.Sprintf("%d.%d", k.epoch, k.index))
	if err != nil {
		err = fmt.Errorf("spawn instance %s: %w", k, err)
	}
	msg.done <- err
}

// restartStrategy applies an operator's RestartPolicy to its failing
// instances: restart after an exponential backoff, or, when more than
// MaxRestarts failures that count (see strikes.go: not those of a poison
// record dead-lettered alone) fall within Window, mark the instance failed
// (it then dead-letters what it receives, so nothing upstream stalls).
type restartStrategy struct{ op *operator }

var _ actor.SupervisorStrategy = (*restartStrategy)(nil)

// HandleFailure runs on the supervisor's goroutine for each failure.
// Protoactor's restart statistics are not used: the instance's strikes are
// what counts.
func (s *restartStrategy) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, _ any) {
	inst := s.op.instanceByPID(child)
	if inst == nil {
		sup.StopChildren(child)
		return
	}
	p := inst.spec.Meta.Restart
	failures, fresh := inst.strike(time.Now(), p.Window)
	if fresh || inst.restartBackoff == nil {
		// Unjittered: one instance's restarts do not contend with others'.
		inst.restartBackoff = backoff.New(p.InitialBackoff, p.MaxBackoff, 0)
	}
	inst.noteFailure(reason)
	if failures > p.MaxRestarts {
		inst.markFailed(fmt.Sprintf("%d failures within %v (max restarts %d); last: %v", failures, p.Window, p.MaxRestarts, reason))
		sup.RestartChildren(child)
		return
	}
	delay := inst.restartBackoff.Next()
	inst.log.Warn("operator instance failed; restarting", "failures", failures, "backoff", delay, "reason", fmt.Sprint(reason))
	s.op.mu.Lock()
	defer s.op.mu.Unlock() // held until t is in the map: the callback locks too
	var t *time.Timer
	t = time.AfterFunc(delay, func() {
		s.op.mu.Lock()
		_, live := s.op.backoff[t]
		delete(s.op.backoff, t)
		s.op.mu.Unlock()
		if live {
			sup.RestartChildren(child)
		}
	})
	s.op.backoff[t] = struct{}{}
}
