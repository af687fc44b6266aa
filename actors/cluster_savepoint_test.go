//go:build !race

package actors_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/cluster/memdisc"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// A savepoint asked of a node that does not coordinate is forwarded to the
// coordinator (the lowest id) and answered with its id once complete.
func TestClusterSavepointOnAnyNode(t *testing.T) {
	const records = 20_000
	reg, store := memdisc.NewRegistry(), checkpointStore(t)
	gen := func() core.Operator {
		return &sluicetest.Gen{Name: "gen", Stream: "words", Count: records, Key: sluicetest.Key(1000), Batch: 100}
	}
	cnt := func() core.Operator { return &counter{name: "count", input: "words", parallelism: 4} }
	nodes := map[string]*actors.Node{}
	for _, id := range []string{"a", "b"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		n, err := actors.Start(ctx, actors.Config{LocalStore: tpebble.Local, NodeID: id, DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t),
			Cluster:     &actors.ClusterConfig{Discovery: memdisc.New(reg)},
			Checkpoints: &actors.CheckpointConfig{Store: store, Interval: 100 * time.Millisecond}}, gen, cnt)
		cancel()
		sluicetest.Must(t, err)
		nodes[id] = n
		t.Cleanup(func() { _ = n.Stop(context.Background()) })
	}
	a, b := nodes["a"], nodes["b"]
	sluicetest.WaitFor(t, time.Minute, "both nodes running instances, a checkpoint complete", func() bool {
		return running(a, "count") > 0 && running(b, "count") > 0 && checkpointStats(t, a).Completed > 0
	})
	if st := checkpointStats(t, b); st.Coordinator || st.CoordinatorNode != "a" {
		t.Fatalf("b's checkpoint status %+v: want a coordinating", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := b.Checkpoint(ctx)
	sluicetest.Must(t, err)
	m, err := a.CheckpointMeta(ctx, id)
	sluicetest.Must(t, err)
	if !m.Savepoint || len(m.Nodes) != 2 {
		t.Fatalf("checkpoint %d asked of b: savepoint %v, %d nodes' parts; want a savepoint of both", id, m.Savepoint, len(m.Nodes))
	}
	if st := checkpointStats(t, a); st.Last < id {
		t.Fatalf("the coordinator's last checkpoint is %d, before the savepoint %d", st.Last, id)
	}
}
