package actors

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/placement"
)

// operator is one operator on a node: its metadata, factory, supervisor
// actor and instances.
type operator struct {
	node      *Node
	meta      core.Metadata
	factory   core.Factory
	outputs   map[string]bool // declared outputs plus the dead-letter stream
	source    bool            // implements core.Source
	supName   string
	supPID    *actor.PID
	instances []*instance

	mu      sync.Mutex // guards backoff
	backoff map[*time.Timer]struct{}
}

func newOperator(n *Node, meta core.Metadata, f core.Factory) *operator {
	op := &operator{
		node:    n,
		meta:    meta,
		factory: f,
		outputs: map[string]bool{core.DeadLetterStream(meta.Name): true},
		supName: "op/" + meta.Name,
		backoff: make(map[*time.Timer]struct{}),
	}
	for _, s := range meta.Outputs {
		op.outputs[s] = true
	}
	_, op.source = f().(core.Source)
	addr := n.system.Address()
	for i := 0; i < meta.Parallelism; i++ {
		lo, hi := placement.GroupRange(i, meta.KeyGroups, meta.Parallelism)
		pid := actor.NewPID(addr, fmt.Sprintf("%s/%d", op.supName, i))
		op.instances = append(op.instances, newInstance(op, i, lo, hi, pid))
	}
	return op
}

// pids returns the instance PIDs by index.
func (op *operator) pids() []*actor.PID {
	out := make([]*actor.PID, len(op.instances))
	for i, inst := range op.instances {
		out[i] = inst.pid
	}
	return out
}

// spawn starts the operator's supervisor and, under it, its instances.
func (op *operator) spawn(ctx context.Context) error {
	props := actor.PropsFromProducer(func() actor.Actor { return &supervisorActor{op: op} },
		actor.WithSupervisor(&restartStrategy{op: op}))
	pid, err := op.node.system.Root.SpawnNamed(props, op.supName)
	if err != nil {
		return fmt.Errorf("spawn supervisor: %w", err)
	}
	op.supPID = pid
	done := make(chan error, 1)
	op.node.system.Root.Send(pid, spawnMsg{done: done})
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// activate starts timers and polling in every instance.
func (op *operator) activate() { op.broadcast(activateMsg{}) }

// broadcast sends msg to every instance.
func (op *operator) broadcast(msg any) {
	for _, inst := range op.instances {
		op.node.system.Root.Send(inst.pid, msg)
	}
}

// stop stops the supervisor and its instances, which commit their state.
func (op *operator) stop() error {
	op.mu.Lock()
	for t := range op.backoff {
		t.Stop()
	}
	clear(op.backoff)
	op.mu.Unlock()
	if op.supPID == nil {
		return nil
	}
	if err := op.node.system.Root.StopFuture(op.supPID).Wait(); err != nil {
		return fmt.Errorf("actors: stop operator %q: %w", op.meta.Name, err)
	}
	var firstErr error
	for _, inst := range op.instances {
		if err := inst.closeErr(); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("actors: stop operator %q: %w", op.meta.Name, err)
		}
	}
	return firstErr
}

// instanceByPID finds the instance with the given PID.
func (op *operator) instanceByPID(pid *actor.PID) *instance {
	for _, inst := range op.instances {
		if inst.pid.Id == pid.Id {
			return inst
		}
	}
	return nil
}

// supervisorActor is the parent of an operator's instances on a node.
type supervisorActor struct{ op *operator }

// Receive spawns the instances on request.
func (s *supervisorActor) Receive(ctx actor.Context) {
	msg, ok := ctx.Message().(spawnMsg)
	if !ok {
		return
	}
	for _, inst := range s.op.instances {
		props := actor.PropsFromProducer(inst.newIncarnation)
		if _, err := ctx.SpawnNamed(props, fmt.Sprint(inst.index)); err != nil {
			msg.done <- fmt.Errorf("spawn instance %d: %w", inst.index, err)
			return
		}
	}
	msg.done <- nil
}

// restartStrategy applies an operator's RestartPolicy to its failing
// instances: restart after an exponential backoff, or, when the policy is
// exhausted, mark the instance failed (it then dead-letters what it
// receives, so nothing upstream stalls).
type restartStrategy struct{ op *operator }

var _ actor.SupervisorStrategy = (*restartStrategy)(nil)

// HandleFailure runs on the supervisor's goroutine for each failure.
func (s *restartStrategy) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason, _ any) {
	inst := s.op.instanceByPID(child)
	if inst == nil {
		sup.StopChildren(child)
		return
	}
	p := s.op.meta.Restart
	if rs.NumberOfFailures(p.Window) == 0 {
		rs.Reset()
	}
	rs.Fail()
	failures := rs.NumberOfFailures(p.Window)
	inst.noteFailure(reason)
	if failures > p.MaxRestarts {
		inst.markFailed(fmt.Sprintf("%d failures within %v (max restarts %d); last: %v", failures, p.Window, p.MaxRestarts, reason))
		sup.RestartChildren(child)
		return
	}
	backoff := p.InitialBackoff << min(failures-1, 30)
	if backoff > p.MaxBackoff || backoff <= 0 {
		backoff = p.MaxBackoff
	}
	s.op.node.log.Warn("operator instance failed; restarting",
		"operator", s.op.meta.Name, "instance", inst.index, "failures", failures, "backoff", backoff, "reason", fmt.Sprint(reason))
	s.op.mu.Lock()
	defer s.op.mu.Unlock()
	var t *time.Timer
	t = time.AfterFunc(backoff, func() {
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

// status summarises the operator.
func (op *operator) status() OperatorStatus {
	st := OperatorStatus{Name: op.meta.Name, Parallelism: op.meta.Parallelism, Inputs: op.meta.Inputs, Outputs: op.meta.Outputs}
	for _, inst := range op.instances {
		st.Instances = append(st.Instances, inst.status())
	}
	return st
}
