package handoff

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/topology"
)

// testNode is the node as the coordinator's handoff code uses it here:
// only its rollback generation (any other method of Node panics: the
// embedded interface is nil).
type testNode struct {
	Node
	gen atomic.Uint64
}

func (n *testNode) Generation() uint64 { return n.gen.Load() }

// testDB returns a state database of its own.
func testDB(t *testing.T) *persistence.DB {
	t.Helper()
	db, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// testCoordinator returns the coordinator of node self with database db,
// in rollback generation gen, running topo and holding held.
func testCoordinator(db *persistence.DB, gen uint64, self string, topo topology.Topology, held map[string][]bool) (*Coordinator, *testNode) {
	n := &testNode{}
	n.gen.Store(gen)
	c := New(Params{NodeID: self, DB: db, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Topo: topo, Held: held, Gen: gen}, n)
	return c, n
}

// fillGroups writes one key into each of op's key groups [first, end).
func fillGroups(t *testing.T, db *persistence.DB, op string, first, end int) {
	t.Helper()
	s := db.NewStore(op)
	for g := first; g < end; g++ {
		s.Set(g, []byte("k"), []byte("v"))
	}
	if err := s.Commit(true); err != nil {
		t.Fatal(err)
	}
}

// groupsWithData returns the key groups of op in [0, end) holding data.
func groupsWithData(t *testing.T, db *persistence.DB, op string, end int) []int {
	t.Helper()
	var out []int
	err := db.NewStore(op).Scan(0, end, nil, func(kg int, _, _ []byte) error {
		out = append(out, kg)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A handoff chunk read before a rollback must not land after it: the
// receiver restores those key groups from the checkpoint, and state from
// after the checkpoint under an instance that replays from it counts twice.
func TestHandoffChunkOfAnotherGenerationIsRefused(t *testing.T) {
	src := testDB(t)
	fillGroups(t, src, "count", 0, 4)
	var kvs []*wire.KV
	if err := src.ExportGroups("count", 0, 4, 1<<20, func(b []persistence.KV) error {
		for _, kv := range b {
			kvs = append(kvs, &wire.KV{Key: kv.Key, Value: kv.Value})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(kvs) != 4 {
		t.Fatalf("exported %d keys, want 4", len(kvs))
	}
	dst := testDB(t)
	c, _ := testCoordinator(dst, 7, "b", topology.Topology{}, nil)
	for _, gen := range []uint64{6, 8} {
		ack := c.onChunk(&wire.HandoffChunk{Operator: "count", FirstGroup: 0, EndGroup: 4, Replace: true, Kvs: kvs, Generation: gen})
		if !strings.Contains(ack.Error, "rolled back") {
			t.Fatalf("chunk of generation %d at a node in 7: ack %q, want a refusal", gen, ack.Error)
		}
		if got := groupsWithData(t, dst, "count", 8); len(got) > 0 {
			t.Fatalf("a refused chunk wrote key groups %v", got)
		}
		if c.heldRuns("count", 0, 8) != nil {
			t.Fatalf("a refused chunk marked key groups held: %v", c.heldRuns("count", 0, 8))
		}
	}
	if ack := c.onChunk(&wire.HandoffChunk{Operator: "count", FirstGroup: 0, EndGroup: 4, Replace: true, Kvs: kvs, Generation: 7}); ack.Error != "" {
		t.Fatalf("chunk of the receiver's generation refused: %s", ack.Error)
	}
	if got := groupsWithData(t, dst, "count", 8); len(got) != 4 {
		t.Fatalf("key groups with data after the chunk: %v, want 0-3", got)
	}
}

// After a rollback a node holds only the key groups of the instances it
// restored: what it kept for instances released here (waiting to be asked
// for, or being shipped) is from after the checkpoint and is dropped, so
// that a node asking for it is told nothing is here and restores it from
// the checkpoint.
func TestRollbackForgetsKeyGroupsItDidNotRestore(t *testing.T) {
	db := testDB(t)
	fillGroups(t, db, "count", 0, 8)
	fillGroups(t, db, "gen", 0, 2)
	fillGroups(t, db, "killed", 0, 2)
	topo := topology.Topology{Operators: []topology.OperatorSpec{
		{Kind: "count", Meta: core.Metadata{Name: "count", Parallelism: 2}},
		{Kind: "gen", Meta: core.Metadata{Name: "gen", Parallelism: 1}},
	}}
	c, _ := testCoordinator(db, 3, "a", topo, nil)
	for g := 0; g < 8; g++ {
		c.groups(c.held, "count")[g] = true
	}
	for g := 0; g < 2; g++ {
		c.groups(c.held, "gen")[g] = true
		c.groups(c.held, "killed")[g] = true
	}
	c.forgetStale(3, map[string][][2]int{"count": {{0, 2}, {6, 8}}})
	// An operator killed without purge keeps its state for a redeploy.
	if got, want := c.heldRuns("killed", 0, 2), [][2]int{{0, 2}}; !slices.Equal(got, want) {
		t.Fatalf("held groups of a killed operator after the rollback: %v, want %v", got, want)
	}
	if got := groupsWithData(t, db, "killed", 2); len(got) != 2 {
		t.Fatalf("a killed operator's groups with data after the rollback: %v, want 0-1", got)
	}
	if got, want := c.heldRuns("count", 0, 8), [][2]int{{0, 2}, {6, 8}}; !slices.Equal(got, want) {
		t.Fatalf("held count groups after the rollback: %v, want %v", got, want)
	}
	if got := c.heldRuns("gen", 0, 2); got != nil {
		t.Fatalf("held gen groups after the rollback: %v, want none", got)
	}
	if got, want := groupsWithData(t, db, "count", 8), []int{0, 1, 6, 7}; !slices.Equal(got, want) {
		t.Fatalf("count groups with data after the rollback: %v, want %v", got, want)
	}
	if got := groupsWithData(t, db, "gen", 2); len(got) > 0 {
		t.Fatalf("gen groups with data after the rollback: %v, want none", got)
	}
}

// While a node rolls back (its generation moved on, its stale state not yet
// dropped) it neither takes state nor ships it: a chunk would be dropped as
// stale when the rollback ends, and what it holds may be from after the
// checkpoint. Requests wait for the rollback's end.
func TestNodeRollingBackNeitherTakesNorShipsState(t *testing.T) {
	db := testDB(t)
	fillGroups(t, db, "count", 0, 4)
	topo := topology.Topology{Operators: []topology.OperatorSpec{
		{Kind: "count", Meta: core.Metadata{Name: "count", Parallelism: 1}},
	}}
	c, n := testCoordinator(db, 5, "a", topo, map[string][]bool{"count": slices.Repeat([]bool{true}, core.MaxKeyGroups)})
	n.gen.Store(6) // the rollback to generation 6 has begun here
	ack := c.onChunk(&wire.HandoffChunk{Operator: "count", FirstGroup: 4, EndGroup: 8, Replace: true, Generation: 6})
	if !strings.Contains(ack.Error, "rolled back") {
		t.Fatalf("chunk while rolling back: ack %q, want a refusal", ack.Error)
	}
	c.serve(&wire.HandoffRequest{Operator: "count", Epoch: 0, Index: 0, FirstGroup: 0, EndGroup: 4, Requester: "b", Acquisition: 1})
	if len(c.waiting) != 1 || len(c.exporting) != 0 {
		t.Fatalf("request while rolling back: %d waiting, %d exporting; want it waiting", len(c.waiting), len(c.exporting))
	}
	c.forgetStale(6, nil)
	c.gen = 6
	if c.rollingBack() {
		t.Fatal("still rolling back after the stale state was dropped")
	}
	if ack := c.onChunk(&wire.HandoffChunk{Operator: "count", FirstGroup: 4, EndGroup: 8, Replace: true, Generation: 6}); ack.Error != "" {
		t.Fatalf("chunk after the rollback refused: %s", ack.Error)
	}
}
