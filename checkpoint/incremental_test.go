//go:build !race

// One gigabyte of state is written here at full speed only: make test
// runs this package a second time without the race detector for it.

package checkpoint_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestIncrementalUploadOfAGigabyte: with 1 GiB of state and 1 % of the
// keys updated between two checkpoints, the second uploads a small
// fraction of the state (the SST files already in the store are
// referenced, not sent again).
func TestIncrementalUploadOfAGigabyte(t *testing.T) {
	const (
		groups    = 8
		perGroup  = 131_072 // 8 × 131,072 keys × 1 KiB = 1 GiB
		valueSize = 1024
		batch     = 8192
	)
	w := newWorld(t)
	rng := rand.NewChaCha8([32]byte{7})
	value := make([]byte, valueSize)
	s := w.db.NewStore("count")
	put := func(g, k int) {
		_, _ = rng.Read(value) // incompressible: the bytes on disk are the state's
		s.Set(g, []byte(fmt.Sprintf("k%06d", k)), value)
	}
	start := time.Now()
	for g := range groups {
		for k := range perGroup {
			put(g, k)
			if k%batch == batch-1 {
				if err := s.Commit(false); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := s.Commit(false); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d MiB of state in %v", groups*perGroup*valueSize>>20, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	first := w.take(1, nil)
	t.Logf("checkpoint 1: uploaded %d MiB of %d MiB of state in %v", first.Uploaded()>>20, first.Size()>>20, time.Since(start).Round(time.Millisecond))
	if first.Size() < 1<<30 {
		t.Fatalf("checkpoint 1 holds %d bytes of state, want at least 1 GiB", first.Size())
	}

	// 1 % of the keys, spread over every group.
	for g := range groups {
		for k := 0; k < perGroup; k += 100 {
			put(g, k)
		}
	}
	if err := s.Commit(false); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	second := w.take(2, &first)
	t.Logf("checkpoint 2, after 1%% of the keys changed: uploaded %d MiB of %d MiB of state (%.1f%%) in %v",
		second.Uploaded()>>20, second.Size()>>20, 100*float64(second.Uploaded())/float64(second.Size()), time.Since(start).Round(time.Millisecond))
	if second.Uploaded()*10 > second.Size() {
		t.Fatalf("checkpoint 2 uploaded %d of %d bytes: want under a tenth of the state", second.Uploaded(), second.Size())
	}
}
