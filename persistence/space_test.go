package persistence

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
)

// TestFullDiskFailsCommitsInsteadOfHanging fills a small tmpfs under a
// DB: the commit that hits ENOSPC fails the DB (Pebble's commit pipeline
// is broken from then on), and every later commit and Close return the
// failure at once rather than blocking for ever in Pebble.
func TestFullDiskFailsCommitsInsteadOfHanging(t *testing.T) {
	// Pebble may end the process with a fatal error on ENOSPC
	// (sluicetest.PebbleCrash), so the body runs in a child process: it
	// must pass, or die of that error, but never hang.
	dir, child := sluicetest.ChildDir()
	if !child {
		out, err := sluicetest.InChild(t, sluicetest.Tmpfs(t, 8<<20), 3*time.Minute)
		sluicetest.ChildOutcome(t, out, err)
		return
	}
	db, err := Open(filepath.Join(dir, "db"), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 64<<10)
	var failure error
	for i := 0; failure == nil; i++ {
		if i > 1000 {
			t.Fatal("64 MiB written to an 8 MiB file system without an error")
		}
		failure = within(t, "commit", func() error { return db.SetMeta(fmt.Sprint(i), val) })
	}
	if !errors.Is(failure, ErrFailed) || !errors.Is(failure, syscall.ENOSPC) {
		t.Fatalf("commit on a full disk: got %v, want ErrFailed wrapping ENOSPC", failure)
	}
	if err := db.Failed(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Failed() = %v, want the ENOSPC failure", err)
	}
	if err := within(t, "commit after the failure", func() error { return db.SetMeta("x", []byte("y")) }); !errors.Is(err, ErrFailed) {
		t.Fatalf("commit after the failure: got %v, want ErrFailed", err)
	}
	if err := within(t, "Close", db.Close); !errors.Is(err, ErrFailed) {
		t.Fatalf("Close of a failed DB: got %v, want ErrFailed", err)
	}
}

// within runs f and fails the test if it has not returned within 10 s.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s blocked for 10 s", what)
		return nil
	}
}

func TestDiskSpace(t *testing.T) {
	dir := sluicetest.Tmpfs(t, 4<<20)
	before, err := DiskSpace(dir)
	if err != nil {
		t.Fatal(err)
	}
	if before.Total != 4<<20 || before.Free != 4<<20 {
		t.Fatalf("empty 4 MiB tmpfs: got %+v, want 4194304 free of 4194304", before)
	}
	sluicetest.FillDisk(t, dir, 1<<20)
	after, err := DiskSpace(dir)
	if err != nil {
		t.Fatal(err)
	}
	if after.Free > 1<<20 || after.Total != before.Total {
		t.Fatalf("after filling to 1 MiB: got %+v", after)
	}
	if _, err := DiskSpace(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("DiskSpace of a missing directory: no error")
	}
}
