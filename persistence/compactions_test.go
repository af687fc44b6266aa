package persistence

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
)

func TestHoldCompactionsUntilReleased(t *testing.T) {
	db, err := Open(t.TempDir(), Options{HoldCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	// Overlapping flushes: L0 past Pebble's compaction threshold (4
	// files), below the one that stops writes (12).
	for round := range 6 {
		setAll(t, db, "count", 0, 4, 20, string(rune('a'+round)))
		if err := db.pdb.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	m := db.pdb.Metrics()
	if n := m.Compact.Count; n != 0 {
		t.Fatalf("%d compactions while held, want 0", n)
	}
	if n := m.Levels[0].TablesCount; n < 6 {
		t.Fatalf("L0 holds %d tables after 6 flushes, want 6", n)
	}
	db.ReleaseCompactions()
	db.ReleaseCompactions() // twice is fine
	sluicetest.WaitFor(t, 30*time.Second, "a compaction after the release", func() bool {
		return db.pdb.Metrics().Compact.Count > 0
	})
	for k, v := range values(t, db, "count", 0, 4) {
		if v != "f" {
			t.Fatalf("%s = %q after compactions, want f", k, v)
		}
	}
}

func TestCompactionsRunWithoutHold(t *testing.T) {
	db := open(t, t.TempDir())
	for round := range 6 {
		setAll(t, db, "count", 0, 4, 20, string(rune('a'+round)))
		if err := db.pdb.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	sluicetest.WaitFor(t, 30*time.Second, "a compaction of 6 overlapping L0 tables", func() bool {
		return db.pdb.Metrics().Compact.Count > 0
	})
}
