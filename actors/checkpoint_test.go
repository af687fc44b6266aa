package actors_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/objstore/fsstore"
	"github.com/sluicehq/sluice/persistence"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// checkpointStore returns a checkpoint store on a temporary directory.
func checkpointStore(t *testing.T) *checkpoint.Store {
	t.Helper()
	obj, err := fsstore.Open(t.TempDir())
	sluicetest.Must(t, err)
	return checkpoint.NewStore(obj)
}

// eoNode starts an exactly-once node with a generator of count records and
// a counter.
func eoNode(t *testing.T, dir string, store *checkpoint.Store, count int) *actors.Node {
	t.Helper()
	gen := func() core.Operator {
		return &sluicetest.Gen{Name: "gen", Stream: "words", Count: count, Key: sluicetest.Key(1000), Batch: 100}
	}
	cnt := func() core.Operator { return &counter{name: "count", input: "words", parallelism: 3} }
	n, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, NodeID: "n1", DataDir: dir, NoSync: true, Logger: sluicetest.Logger(t),
		Checkpoints: &actors.CheckpointConfig{Store: store, Interval: 20 * time.Millisecond}}, gen, cnt)
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	return n
}

func checkpointStats(t *testing.T, n *actors.Node) actors.CheckpointStats {
	t.Helper()
	s, err := n.CheckpointStatus(context.Background())
	sluicetest.Must(t, err)
	return s
}

// Checkpoints complete while the pipeline runs; a node started on an empty
// data directory with the same store restores the state of the last one
// (taken when the first node stopped).
func TestCheckpointsRestoreOnAFreshNode(t *testing.T) {
	const records = 50_000
	store := checkpointStore(t)
	dir1 := t.TempDir()
	n := eoNode(t, dir1, store, records)
	sluicetest.WaitFor(t, time.Minute, "every record counted", func() bool { return processed(n, "count") == int64(records) })
	sluicetest.WaitFor(t, time.Minute, "three checkpoints", func() bool { return checkpointStats(t, n).Completed >= 3 })
	st := checkpointStats(t, n)
	if !st.Coordinator || st.Last == 0 || st.LastSize == 0 {
		t.Fatalf("checkpoint status %+v: want a coordinator with a complete checkpoint", st)
	}
	stop(t, n) // takes a final checkpoint
	want, _ := readCounts(t, dir1, "count")

	list, err := store.List(context.Background())
	sluicetest.Must(t, err)
	if len(list) == 0 || len(list) > 3 {
		t.Fatalf("%d checkpoints kept, want 1 to 3", len(list))
	}
	for _, m := range list {
		// Each part times its phases, in order.
		for _, p := range m.Nodes {
			ph := p.Phases
			if ph == nil || ph.Injected < 0 || ph.Snapshotted < ph.Injected || ph.Copied < ph.Snapshotted || ph.Uploaded < ph.Copied || ph.Uploaded == 0 {
				t.Fatalf("checkpoint %d, node %s: phases %+v, want 0 ≤ injected ≤ snapshotted ≤ copied ≤ uploaded, uploaded > 0", m.ID, p.Node, ph)
			}
		}
	}

	dir2 := t.TempDir()
	n2 := eoNode(t, dir2, store, records)
	sluicetest.WaitFor(t, time.Minute, "the restored instances running", func() bool { return running(n2, "count") == 3 && processed(n2, "count") == records })
	stop(t, n2)
	got, _ := readCounts(t, dir2, "count")
	if len(got) != len(want) || len(got) != 1000 {
		t.Fatalf("restored %d keys, the first node had %d (want 1000)", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %s restored as %d, want %d", k, got[k], v)
		}
	}
}

// Every checkpoint is a consistent cut: taken while records are in flight,
// the generators' positions in it account for exactly the records its
// counts reflect. (An instance with upstreams snapshots at the barriers,
// not when the checkpoint is triggered.)
func TestCheckpointsAreConsistentCuts(t *testing.T) {
	records := 1_000_000
	if raceEnabled {
		records = 300_000 // slower per record: still many checkpoints mid-stream
	}
	store := checkpointStore(t)
	gen := func() core.Operator {
		return &sluicetest.Gen{Name: "gen", Stream: "words", Count: records, Key: sluicetest.Key(500), Batch: 64, Parallelism: 2}
	}
	cnt := func() core.Operator { return &counter{name: "count", input: "words", parallelism: 3} }
	n, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, NodeID: "n1", DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t),
		Checkpoints: &actors.CheckpointConfig{Store: store, Interval: time.Millisecond, Keep: 50}}, gen, cnt)
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	sluicetest.WaitFor(t, time.Minute, "every record counted", func() bool { return processed(n, "count") == int64(records) })
	stop(t, n)

	list, err := store.List(context.Background())
	sluicetest.Must(t, err)
	mid := 0
	for _, m := range list {
		produced, counted := cutOf(t, store, m)
		if produced != counted {
			t.Fatalf("checkpoint %d: the generators had produced %d records, the counts reflect %d", m.ID, produced, counted)
		}
		if produced > 0 && produced < int64(records) {
			mid++
		}
	}
	if mid < 3 {
		t.Fatalf("only %d of %d checkpoints were taken mid-stream: the test did not exercise in-flight records", mid, len(list))
	}
	t.Logf("%d checkpoints, %d of them mid-stream: every one a consistent cut", len(list), mid)
}

// cutOf restores checkpoint m into a fresh database and returns how many
// records its generator positions say were produced and how many its
// counts reflect.
func cutOf(t *testing.T, store *checkpoint.Store, m checkpoint.Meta) (produced, counted int64) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "part")
	sluicetest.Must(t, store.Fetch(context.Background(), m, "n1", dir, t.TempDir()))
	snap, err := persistence.OpenCheckpoint(dir)
	sluicetest.Must(t, err)
	defer snap.Close()
	dbDir := t.TempDir()
	db, err := persistence.Open(dbDir, persistence.Options{})
	sluicetest.Must(t, err)
	for _, op := range []string{"gen", "count"} {
		_, _, err := db.RestoreGroups(snap, op, 0, 256, t.TempDir())
		sluicetest.Must(t, err)
	}
	gs := db.NewStore("gen")
	for j, first := range []int{0, 128} { // the two generator instances' first key groups
		v, ok, err := gs.Get(first, []byte("next"))
		sluicetest.Must(t, err)
		if ok {
			next, err := strconv.Atoi(string(v))
			sluicetest.Must(t, err)
			produced += int64((next - j + 1) / 2)
		}
	}
	sluicetest.Must(t, db.Close())
	counts, _ := readCounts(t, dbDir, "count")
	for _, c := range counts {
		counted += c
	}
	return produced, counted
}
