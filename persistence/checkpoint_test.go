package persistence

import (
	"fmt"
	"path/filepath"
	"testing"
)

// setAll writes n keys per key group in groups [first, end) of op, values
// tagged with round.
func setAll(t *testing.T, db *DB, op string, first, end, n int, round string) {
	t.Helper()
	s := db.NewStore(op)
	for g := first; g < end; g++ {
		for k := range n {
			s.Set(g, []byte(fmt.Sprintf("k%d", k)), []byte(round))
		}
	}
	if err := s.Commit(false); err != nil {
		t.Fatal(err)
	}
}

// values returns every state value of op in groups [first, end), by
// "group/key".
func values(t *testing.T, db *DB, op string, first, end int) map[string]string {
	t.Helper()
	out := map[string]string{}
	s := db.NewStore(op)
	err := s.Scan(first, end, nil, func(g int, k, v []byte) error {
		out[fmt.Sprintf("%d/%s", g, k)] = string(v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCheckpointAndRestoreGroups(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	setAll(t, db, "count", 0, 8, 100, "r1")
	setAll(t, db, "other", 0, 8, 10, "o1")

	ck := filepath.Join(t.TempDir(), "c1")
	files, err := db.Checkpoint(ck, []Span{GroupSpan("count", 0, 16)})
	if err != nil {
		t.Fatal(err)
	}
	shared := map[string]bool{}
	for _, f := range files {
		if f.Shared {
			shared[f.Name] = true
		}
	}
	if len(shared) == 0 {
		t.Fatalf("checkpoint files %+v: no table file", files)
	}

	// Change the live data: overwrite groups 2..5, delete a key, add one.
	setAll(t, db, "count", 2, 5, 100, "r2")
	s := db.NewStore("count")
	s.Delete(6, []byte("k1"))
	s.Set(7, []byte("new"), []byte("r2"))
	if err := s.Commit(false); err != nil {
		t.Fatal(err)
	}
	setAll(t, db, "other", 0, 8, 10, "o2")

	snap, err := OpenCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	keys, _, err := db.RestoreGroups(snap, "count", 2, 8, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if keys != 600 {
		t.Fatalf("restored %d keys, want 600", keys)
	}
	got := values(t, db, "count", 0, 8)
	if len(got) != 800 {
		t.Fatalf("%d keys after the restore, want 800 (the new key gone, the deleted one back)", len(got))
	}
	for k, v := range got {
		if v != "r1" {
			t.Fatalf("%s = %s after the restore, want r1", k, v)
		}
	}
	for k, v := range values(t, db, "other", 0, 8) {
		if v != "o2" {
			t.Fatalf("other %s = %s: a restore of count touched another operator", k, v)
		}
	}

	// A second checkpoint after a small change shares most table files.
	setAll(t, db, "count", 0, 1, 1, "r3")
	files2, err := db.Checkpoint(filepath.Join(t.TempDir(), "c2"), []Span{GroupSpan("count", 0, 8)})
	if err != nil {
		t.Fatal(err)
	}
	reused := 0
	for _, f := range files2 {
		if f.Shared && shared[f.Name] {
			reused++
		}
	}
	if reused == 0 {
		t.Fatalf("second checkpoint %+v shares no table file with the first %+v", files2, files)
	}

	// Restoring groups the checkpoint covered but held nothing in empties
	// them. (Only covered spans may be restored: table files overlapping
	// them hold other keys too, at whatever version they had.)
	setAll(t, db, "count", 10, 12, 5, "late")
	if _, _, err := db.RestoreGroups(snap, "count", 8, 16, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if got := values(t, db, "count", 8, 16); len(got) != 0 {
		t.Fatalf("count groups 8..16 hold %d keys after restoring them from a checkpoint where they were empty", len(got))
	}
}
