package actors_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/topology"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// router produces each record to the stream its value names.
type router struct{ outputs []string }

func (r router) Metadata() core.Metadata {
	return core.Metadata{Name: "router", Inputs: []core.Input{{Stream: "in"}}, Outputs: r.outputs}
}
func (router) Init(core.Context) error { return nil }
func (router) ProcessRecord(ctx core.Context, rec core.Record) error {
	return ctx.Produce(string(rec.Value), rec)
}
func (router) ProcessTimer(core.Context, string, time.Time) error { return nil }

// TestRedeployWithNewOutputsAppliesToRunningInstances: a redeploy that
// adds an output (same parallelism, so the same epoch: nothing restarts)
// lets the running instances produce to it at once.
func TestRedeployWithNewOutputsAppliesToRunningInstances(t *testing.T) {
	var intoA, intoB sluicetest.Collector
	kinds, specs, err := actors.Kinds(
		func() core.Operator { return router{outputs: []string{"a"}} },
		func() core.Operator {
			return &sluicetest.Sink{Name: "sink-a", Inputs: []core.Input{{Stream: "a"}}, Into: &intoA}
		},
		func() core.Operator {
			return &sluicetest.Sink{Name: "sink-b", Inputs: []core.Input{{Stream: "b"}}, Into: &intoB}
		},
	)
	sluicetest.Must(t, err)
	n, err := actors.StartNode(context.Background(), actors.Config{LocalStore: tpebble.Local, DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, kinds, specs)
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	ctx := context.Background()

	sluicetest.Must(t, n.Produce(ctx, "in", core.Record{Key: []byte("k"), Value: []byte("a")}))
	sluicetest.WaitFor(t, 30*time.Second, "the record routed to a", func() bool { return intoA.Len() == 1 })

	meta := router{outputs: []string{"a", "b"}}.Metadata()
	var epoch int64
	_, err = topology.Update(ctx, n.Store(), 5, func(cur topology.Topology) (topology.Topology, error) {
		old, _ := cur.Find("router")
		epoch = old.Epoch
		next, _, err := cur.Deploy(topology.OperatorSpec{Kind: "router", Meta: meta}, time.Now())
		return next, err
	})
	sluicetest.Must(t, err)
	sluicetest.WaitFor(t, 30*time.Second, "the node to adopt the redeploy", func() bool {
		spec, ok := n.Topology().Find("router")
		return ok && len(spec.Meta.Outputs) == 2
	})
	if spec, _ := n.Topology().Find("router"); spec.Epoch != epoch {
		t.Fatalf("the redeploy started epoch %d (was %d): want the running instances kept", spec.Epoch, epoch)
	}
	sluicetest.Must(t, n.Produce(ctx, "in", core.Record{Key: []byte("k"), Value: []byte("b")}))
	sluicetest.WaitFor(t, 30*time.Second, "the record routed to the new output b", func() bool { return intoB.Len() == 1 })
	for _, st := range n.Status() {
		for _, in := range st.Instances {
			if in.DeadLetters != 0 || in.Restarts != 0 {
				t.Fatalf("%s/%d: %d dead letters, %d restarts; want none", st.Name, in.Index, in.DeadLetters, in.Restarts)
			}
		}
	}
}
