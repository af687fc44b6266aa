package actors_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// spNode starts an exactly-once node whose generator has produced count
// records in all (it resumes from its position) into a counter of the
// given parallelism.
func spNode(t *testing.T, dir string, store *checkpoint.Store, count, parallelism int, restoreFrom uint64, total *atomic.Int64) *actors.Node {
	t.Helper()
	gen := func() core.Operator {
		return &sluicetest.Gen{Name: "gen", Stream: "words", Count: count, Key: sluicetest.Key(1000), Batch: 100}
	}
	cnt := func() core.Operator {
		return &counter{name: "count", input: "words", parallelism: parallelism, total: total}
	}
	n, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, NodeID: "n1", DataDir: dir, NoSync: true, Logger: sluicetest.Logger(t),
		Checkpoints: &actors.CheckpointConfig{Store: store, Interval: 20 * time.Millisecond, Keep: 1, RestoreFrom: restoreFrom}}, gen, cnt)
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	return n
}

// A savepoint survives retention; a node started from it (RestoreFrom)
// with another parallelism resumes exactly there, although newer
// checkpoints exist: its key groups are redistributed over the new
// instances, and the counts come out exact.
func TestSavepointRestoresWithAnotherParallelism(t *testing.T) {
	const records = 20_000
	ctx := context.Background()
	store := checkpointStore(t)

	// Run 1: half the records at parallelism 2, then a savepoint.
	n := spNode(t, t.TempDir(), store, records/2, 2, 0, nil)
	sluicetest.WaitFor(t, time.Minute, "the first half counted", func() bool { return processed(n, "count") == records/2 })
	sp, err := n.Checkpoint(ctx)
	sluicetest.Must(t, err)
	done := checkpointStats(t, n).Completed
	sluicetest.WaitFor(t, time.Minute, "three checkpoints after the savepoint", func() bool { return checkpointStats(t, n).Completed >= done+3 })
	var list []checkpoint.Meta
	sluicetest.WaitFor(t, time.Minute, "retention down to the newest and the savepoint", func() bool {
		var err error
		list, err = n.Checkpoints(ctx)
		sluicetest.Must(t, err)
		return len(list) <= 2
	})
	if len(list) != 2 || list[0].ID <= sp || list[1].ID != sp || !list[1].Savepoint {
		t.Fatalf("checkpoints kept with Keep 1: %v; want the newest, then savepoint %d", ids(list), sp)
	}
	stop(t, n)

	// Run 2: every record, at parallelism 2; its checkpoints are newer
	// than the savepoint.
	dir2 := t.TempDir()
	n = spNode(t, dir2, store, records, 2, 0, nil)
	sluicetest.WaitFor(t, time.Minute, "the second half counted", func() bool { return processed(n, "count") == records })
	stop(t, n)
	want, _ := readCounts(t, dir2, "count")

	// Run 3: from the savepoint, at parallelism 3: it counts the second
	// half again, to the same counts.
	dir3 := t.TempDir()
	// (The instances' processed counts do not survive a change of
	// parallelism: the records this run counts do the waiting.)
	var counted atomic.Int64
	n = spNode(t, dir3, store, records, 3, sp, &counted)
	sluicetest.WaitFor(t, time.Minute, "three instances running, the second half counted", func() bool {
		return running(n, "count") == 3 && counted.Load() >= records/2
	})
	m, err := n.CheckpointMeta(ctx, sp)
	sluicetest.Must(t, err)
	if !m.Savepoint {
		t.Fatalf("checkpoint %d is not marked a savepoint", sp)
	}
	stop(t, n)
	if counted.Load() != records/2 {
		t.Fatalf("the run from the savepoint counted %d records, want %d", counted.Load(), records/2)
	}
	got, _ := readCounts(t, dir3, "count")
	if len(got) != 1000 || len(want) != 1000 {
		t.Fatalf("%d keys counted from the savepoint, %d without; want 1000", len(got), len(want))
	}
	var total int64
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %s counted %d from the savepoint at parallelism 3, %d at parallelism 2", k, got[k], v)
		}
		total += got[k]
	}
	if total != records {
		t.Fatalf("counts sum to %d, want %d", total, records)
	}
}

func ids(list []checkpoint.Meta) []uint64 {
	out := make([]uint64, len(list))
	for i, m := range list {
		out[i] = m.ID
	}
	return out
}
