package actors_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// A node whose data directory fills up (a 64 MiB tmpfs, filled to 4 MiB
// free, below the node's 8 MiB reserve) turns unhealthy saying why, stops
// processing without losing anything, and resumes by itself when the space
// is freed: every record is counted exactly once in the end.
func TestDiskFullPausesAndResumes(t *testing.T) {
	dir := sluicetest.Tmpfs(t, 64<<20)
	const records, keys = 100_000, 1000
	// The second half waits until the disk is full: the pause must come
	// mid-stream however fast the first half goes.
	var full atomic.Bool
	gen := func() core.Operator {
		return &sluicetest.Gen{Name: "gen", Stream: "words", Count: records, Key: sluicetest.Key(keys), Batch: 100,
			Gate: func(i int) bool { return i < records/2 || full.Load() }}
	}
	count := func() core.Operator { return &counter{name: "count", input: "words", parallelism: 2} }
	n, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, NodeID: "test", DataDir: dir, NoSync: true, Logger: sluicetest.Logger(t),
		MinFreeDisk: 8 << 20, DiskCheckInterval: 10 * time.Millisecond}, gen, count)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Bounded: a node still paused on a full disk cannot drain.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.Stop(ctx)
	})
	if h := n.Health(); !h.Healthy || h.Reason != "" {
		t.Fatalf("health at start: got %+v, want healthy", h)
	}
	sluicetest.WaitFor(t, time.Minute, "first records counted", func() bool { return processed(n, "count") > 0 })

	filler := sluicetest.FillDisk(t, dir, 4<<20)
	sluicetest.WaitFor(t, 10*time.Second, "node unhealthy", func() bool { return !n.Health().Healthy })
	full.Store(true)
	h := n.Health()
	if h.Cause != status.HealthDiskFull || h.Fatal || !strings.HasPrefix(h.Reason, "disk full: ") || !strings.Contains(h.Reason, dir) {
		t.Fatalf("health on a full disk: got %+v, want cause disk-full, not fatal, a reason naming %s", h, dir)
	}
	// Free space is sampled again on every check: Pebble may have removed
	// obsolete files since the filler left 4 MiB, but the node stays
	// unhealthy until twice the 8 MiB reserve is free.
	if h.DiskFree >= 16<<20 || h.DiskTotal != 64<<20 {
		t.Fatalf("health on a full disk: free %d of %d, want < 16 MiB of 64 MiB", h.DiskFree, h.DiskTotal)
	}
	// Processing stops: the count settles (what was being processed
	// finishes) and then stays put.
	last := int64(-1)
	sluicetest.WaitEvery(t, 10*time.Second, 100*time.Millisecond, "processing stopped", func() bool {
		p := processed(n, "count")
		settled := p == last
		last = p
		return settled
	})
	if last >= records {
		t.Fatalf("all %d records counted before the disk filled; the test needs the pause mid-stream", records)
	}
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); {
		if p := processed(n, "count"); p != last {
			t.Fatalf("processed %d → %d while the disk was full", last, p)
		}
		time.Sleep(50 * time.Millisecond) // sampling a condition that must hold
	}
	t.Logf("paused at %d of %d records: %s", last, records, h.Reason)

	// With 8 MiB more free (about 12 MiB: above the reserve, below twice
	// it) the node still waits, and says what for ("88.4 MiB free … below
	// the 64.0 MiB" read as if it were still below the reserve).
	fi, err := os.Stat(filler)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filler, fi.Size()-8<<20); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 10*time.Second, "the node says it waits for space", func() bool {
		return strings.HasPrefix(n.Health().Reason, "waiting for disk space: ")
	})
	if h := n.Health(); h.Healthy || h.Cause != status.HealthDiskFull || !strings.Contains(h.Reason, "until 16.0 MiB are free") {
		t.Fatalf("health above the reserve, below twice it: %+v, want unhealthy, waiting for 16.0 MiB", h)
	}
	if p := processed(n, "count"); p != last {
		t.Fatalf("processed %d → %d while waiting for twice the reserve", last, p)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 10*time.Second, "node healthy again", func() bool { return n.Health().Healthy })
	if h := n.Health(); h.Reason != "" || h.Cause != "" {
		t.Fatalf("health after freeing space: got %+v, want no reason", h)
	}
	sluicetest.WaitFor(t, time.Minute, "every record counted", func() bool { return processed(n, "count") == records })
	stop(t, n)
	counts, _ := readCounts(t, dir, "count")
	for i := range keys {
		if c := counts["k"+strconv.Itoa(i)]; c != records/keys {
			t.Fatalf("k%d = %d, want %d: records lost or counted twice across the pause", i, c, records/keys)
		}
	}
}

// With no reserve (MinFreeDisk < 0) a full disk is met by Pebble itself:
// flushes fail (retried) or a commit fails. Either way the node says so
// instead of hanging silently: unhealthy with a reason, and, if a commit
// failed, Failed closed for the process to exit.
func TestDiskFullWithoutReserveIsNotSilent(t *testing.T) {
	// Pebble may end the process with a fatal error on ENOSPC
	// (sluicetest.PebbleCrash), so the body runs in a child process: it
	// must pass, or die of that error, but never hang.
	dir, child := sluicetest.ChildDir()
	if !child {
		out, err := sluicetest.InChild(t, sluicetest.Tmpfs(t, 32<<20), 3*time.Minute)
		sluicetest.ChildOutcome(t, out, err)
		return
	}
	gen := func() core.Operator {
		return &sluicetest.Gen{Name: "gen", Stream: "words", Count: 1 << 40, Key: sluicetest.Key(1 << 20), Batch: 100}
	}
	count := func() core.Operator { return &counter{name: "count", input: "words", parallelism: 1} }
	n, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, NodeID: "test", DataDir: dir, NoSync: true, Logger: sluicetest.Logger(t),
		MinFreeDisk: -1, DiskCheckInterval: 10 * time.Millisecond}, gen, count)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Stop(ctx)
	})
	sluicetest.WaitFor(t, time.Minute, "first records counted", func() bool { return processed(n, "count") > 0 })
	filler := sluicetest.FillDisk(t, dir, 0)
	sluicetest.WaitFor(t, 30*time.Second, "node unhealthy", func() bool { return !n.Health().Healthy })
	h := n.Health()
	t.Logf("health: %+v", h)
	switch h.Cause {
	case status.HealthStoreFailed:
		// The health check stores the health, then closes Failed.
		sluicetest.WaitFor(t, 10*time.Second, "Failed() closed after the store failed", func() bool {
			select {
			case <-n.Failed():
				return true
			default:
				return false
			}
		})
		if !h.Fatal || !strings.Contains(h.Reason, "no space left on device") {
			t.Fatalf("health after a failed commit: %+v, want fatal, the cause in the reason", h)
		}
	case status.HealthDiskFull:
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		sluicetest.WaitFor(t, 30*time.Second, "node healthy again", func() bool { return n.Health().Healthy })
		p := processed(n, "count")
		sluicetest.WaitFor(t, 30*time.Second, "processing again", func() bool { return processed(n, "count") > p })
	default:
		t.Fatalf("health on a full disk: %+v, want cause disk-full or store-failed", h)
	}
}
