package persistence

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"testing"
)

// compactOp writes n keys per group in op's groups [first, end) and
// compacts them into the bottom level, in table files of their own (keys
// at sequence number 0), as a long-running node's older state is.
func compactOp(t *testing.T, db *DB, op string, first, end, n int, round string) {
	t.Helper()
	// Two overlapping flushes, so that the compaction rewrites them (a
	// single table would move down as it is, sequence numbers and all).
	setAll(t, db, op, first, end, n, "older")
	if err := db.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	setAll(t, db, op, first, end, n, round)
	s := GroupSpan(op, first, end)
	if err := db.pdb.Compact(context.Background(), s.Start, s.End, false); err != nil {
		t.Fatal(err)
	}
}

// restore restores op's groups [first, end) from snap and returns what it
// did.
func restore(t *testing.T, db *DB, snap *Snapshot, op string, first, end int) restoreStats {
	t.Helper()
	st, err := db.restoreGroups(snap, op, first, end, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// sameValues fails unless got equals want.
func sameValues(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if maps.Equal(got, want) {
		return
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Fatalf("%s: %s = %q (present %v), want %q (%d keys, want %d)", what, k, g, ok, w, len(got), len(want))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Fatalf("%s: %s = %q left behind, want absent (%d keys, want %d)", what, k, g, len(got), len(want))
		}
	}
}

// checkpointWithLevels builds op "count" with groups [0,8) and [8,16) in
// two bottom-level table files, then changes above them (newer values, a
// deleted key, a range-deleted group with one key written again), and
// checkpoints groups [0,16). It returns the checkpoint opened and the
// values it holds.
func checkpointWithLevels(t *testing.T, db *DB) (*Snapshot, map[string]string) {
	t.Helper()
	compactOp(t, db, "count", 0, 8, 50, "r1")
	compactOp(t, db, "count", 8, 16, 50, "r1")
	compactOp(t, db, "other", 0, 16, 5, "o1")
	setAll(t, db, "count", 2, 4, 50, "r2")
	s := db.NewStore("count")
	s.Delete(5, []byte("k7"))
	s.Delete(9, []byte("k3"))
	if err := s.Commit(false); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteGroups("count", 6, 7); err != nil {
		t.Fatal(err)
	}
	s.Set(6, []byte("again"), []byte("r2"))
	if err := s.Commit(false); err != nil {
		t.Fatal(err)
	}
	want := values(t, db, "count", 0, 16)
	if len(want) != 16*50-2-50+1 {
		t.Fatalf("%d keys before the checkpoint, want %d", len(want), 16*50-2-50+1)
	}
	dir := filepath.Join(t.TempDir(), "c")
	if _, err := db.Checkpoint(dir, []Span{GroupSpan("count", 0, 16)}); err != nil {
		t.Fatal(err)
	}
	snap, err := OpenCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = snap.Close() })
	return snap, want
}

// changeAfter makes the live data newer than the checkpoint in every
// group: values overwritten, keys added, keys deleted, a group emptied.
func changeAfter(t *testing.T, db *DB) {
	t.Helper()
	setAll(t, db, "count", 0, 16, 60, "late")
	s := db.NewStore("count")
	for g := range 16 {
		s.Delete(g, []byte("k1"))
		s.Set(g, []byte("newer"), []byte("late"))
	}
	if err := s.Commit(false); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteGroups("count", 12, 13); err != nil {
		t.Fatal(err)
	}
	setAll(t, db, "other", 0, 16, 5, "o2")
}

// subset returns the entries of m in groups [first, end).
func subset(m map[string]string, first, end int) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		var g int
		if _, err := fmt.Sscanf(k, "%d/", &g); err == nil && g >= first && g < end {
			out[k] = v
		}
	}
	return out
}

func TestRestoreGroupsLinksBottomTables(t *testing.T) {
	db := open(t, t.TempDir())
	snap, want := checkpointWithLevels(t, db)
	changeAfter(t, db)
	otherBefore := values(t, db, "other", 0, 16)

	st := restore(t, db, snap, "count", 0, 16)
	if st.linked != 2 {
		t.Fatalf("linked %d table files, want the 2 bottom ones of count", st.linked)
	}
	if st.keys != len(want) {
		t.Fatalf("restored %d keys, want %d", st.keys, len(want))
	}
	// The delta: 100 newer values, 2 deletions, a range deletion and the
	// key written again; not the 700 keys the linked files hold.
	if st.written == 0 || st.written > 150 {
		t.Fatalf("wrote %d entries besides the linked files, want the changes above them (about 104)", st.written)
	}
	db.NewStore("count").DropCache()
	sameValues(t, "after the restore", values(t, db, "count", 0, 16), want)
	sameValues(t, "other operator", values(t, db, "other", 0, 16), otherBefore)

	// Later writes go over the restored state as usual.
	setAll(t, db, "count", 3, 4, 1, "after")
	if got := values(t, db, "count", 3, 4)["3/k0"]; got != "after" {
		t.Fatalf("3/k0 = %q after a write over the restored state, want after", got)
	}
}

// newerThanCheckpoint returns a database changed after its checkpoint
// (checkpointWithLevels, changeAfter), the checkpoint, the values it holds
// and those the database holds.
func newerThanCheckpoint(t *testing.T) (db *DB, snap *Snapshot, want, late map[string]string) {
	t.Helper()
	db = open(t, t.TempDir())
	snap, want = checkpointWithLevels(t, db)
	changeAfter(t, db)
	return db, snap, want, values(t, db, "count", 0, 16)
}

func TestRestoreGroupsSubset(t *testing.T) {
	db, snap, want, late := newerThanCheckpoint(t)

	// Groups [0,8): the first bottom file lies within them.
	st := restore(t, db, snap, "count", 0, 8)
	if st.linked != 1 {
		t.Fatalf("linked %d table files restoring [0,8), want 1", st.linked)
	}
	sameValues(t, "restored groups [0,8)", values(t, db, "count", 0, 8), subset(want, 0, 8))
	sameValues(t, "groups [8,16) not restored", values(t, db, "count", 8, 16), subset(late, 8, 16))
}

func TestRestoreGroupsRescaleRewrites(t *testing.T) {
	db, snap, want, late := newerThanCheckpoint(t)

	// Groups [4,12) (another parallelism): both bottom files cross the
	// bounds, so every key is written.
	st := restore(t, db, snap, "count", 4, 12)
	if st.linked != 0 {
		t.Fatalf("linked %d table files restoring [4,12), which no file lies within", st.linked)
	}
	n := len(subset(want, 4, 12))
	if st.keys != n || st.written != n {
		t.Fatalf("restored %d keys writing %d, want %d and %d", st.keys, st.written, n, n)
	}
	sameValues(t, "restored groups [4,12)", values(t, db, "count", 4, 12), subset(want, 4, 12))
	sameValues(t, "groups [0,4) not restored", values(t, db, "count", 0, 4), subset(late, 0, 4))
	sameValues(t, "groups [12,16) not restored", values(t, db, "count", 12, 16), subset(late, 12, 16))
}
