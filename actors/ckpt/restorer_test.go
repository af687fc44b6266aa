package ckpt

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/persistence"
)

// TestRestorerSharesOneOpen: concurrent restores of the same local part
// get one opened copy; a part that cannot be loaded fails every time (no
// entry is left for the next to wait on); CloseAll waits for the last End.
func TestRestorerSharesOneOpen(t *testing.T) {
	dataDir := t.TempDir()
	db, err := persistence.Open(filepath.Join(dataDir, "db"), persistence.Options{})
	if err != nil {
		t.Fatalf("open db: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Checkpoint(filepath.Join(persistence.CheckpointDir(dataDir), "7"), []persistence.Span{persistence.GroupSpan("op", 0, 4)}); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	r := NewRestorer(dataDir, "n1", nil, 0)
	meta := &checkpoint.Meta{ID: 7}

	const restores = 8
	snaps := make([]*persistence.Snapshot, restores)
	errs := make([]error, restores)
	var wg sync.WaitGroup
	for i := range restores {
		r.Begin()
		wg.Add(1)
		go func() {
			defer wg.Done()
			snaps[i], errs[i] = r.Open(meta, "n1")
		}()
	}
	wg.Wait()
	for i := range restores {
		if errs[i] != nil {
			t.Fatalf("restore %d: open: %v", i, errs[i])
		}
		if snaps[i] != snaps[0] {
			t.Fatalf("restore %d: got snapshot %p, want the shared %p", i, snaps[i], snaps[0])
		}
	}

	for range 2 { // another node's part, and no store to fetch it from
		if _, err := r.Open(meta, "n2"); err == nil {
			t.Fatal("open of n2's part without a store: got no error, want one")
		}
	}

	r.CloseAll() // restores in progress: deferred
	if got, _ := r.Open(meta, "n1"); got != snaps[0] {
		t.Fatalf("open after a deferred CloseAll: got %p, want the still open %p", got, snaps[0])
	}
	for range restores {
		r.End()
	}
	r.Begin()
	defer r.CloseAll() // after the End below
	defer r.End()
	again, err := r.Open(meta, "n1")
	if err != nil {
		t.Fatalf("open after CloseAll: %v", err)
	}
	if again == snaps[0] {
		t.Fatal("open after CloseAll: got the closed snapshot, want a new one")
	}
}
