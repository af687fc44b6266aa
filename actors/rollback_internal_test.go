package actors

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/placement"
	"github.com/sluicehq/sluice/topology"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// An instance spawned while a rollback is under way, after the rollback
// stored the new generation and listed the node's instances, is reset into
// the new generation by spawn itself: otherwise it would wait for its
// state in the old one and ignore its activation in the new one, and sit
// awaiting forever (seen in TestExactlyOnceStateThroughFastRestarts, when
// a restarted node placed an instance during the rollback its restart
// started).
func TestInstanceSpawnedDuringARollbackActivatesInIt(t *testing.T) {
	ctx := context.Background()
	n, err := Start(ctx, Config{LocalStore: tpebble.Local, NodeID: "n1", DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)},
		func() core.Operator { return idle{} })
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	running := func(inst *instance) bool { return inst.status().State == status.StateRunning }
	var op *operator
	sluicetest.WaitFor(t, time.Minute, "idle/0 running", func() bool {
		n.mu.Lock()
		op = n.ops["idle"]
		n.mu.Unlock()
		if op == nil {
			return false
		}
		for _, inst := range op.list() {
			if running(inst) {
				return true
			}
		}
		return false
	})

	// spawn made the instance in the current generation; then the
	// rollback's first step (ckpt.Checkpointer.onRollback) moved the generation
	// on and listed the instances, without this one; then spawn started it.
	spec := topology.OperatorSpec{Meta: idle{}.Metadata().WithDefaults(), Kind: "idle", Epoch: 99}
	key := instKey{op: "idle", epoch: 99}
	lo, hi := placement.GroupRange(0, spec.Meta.KeyGroups, spec.Meta.Parallelism)
	inst := newInstance(op, spec, key, lo, hi, actor.NewPID(n.addr, key.pidID()))
	gen := n.gen.Load() + 1
	n.gen.Store(gen)
	sluicetest.Must(t, op.start(ctx, inst))
	t.Cleanup(func() { op.remove(inst) })

	// What the coordinator sends once the instance has its state in the
	// new generation.
	n.system.Root.Send(inst.pid, activateMsg{gen: gen})
	sluicetest.WaitFor(t, time.Minute, "the instance spawned during the rollback running", func() bool { return running(inst) })
	if st := inst.status(); st.LastError != "" {
		t.Fatalf("last error %q", st.LastError)
	}
}
