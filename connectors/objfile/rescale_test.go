package objfile_test

import (
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/connectors/objfile"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// Two instances write; checkpoint 2 completes without them hearing of it,
// and the job restarts from it with one instance, which commits both
// predecessors' files of checkpoint 2 and deletes their open ones.
func TestRescaleCommitsThePredecessorsFiles(t *testing.T) {
	eachStore(t, func(t *testing.T, st objstore.Store) {
		cfg := objfile.SinkConfig{Store: st, RollRecords: 4, Parallelism: 2}
		a := newSink(t, cfg, sdktest.WithInstance(0))
		b := newSink(t, cfg, sdktest.WithInstance(1))
		send(t, a, 0, 5, nil)
		send(t, b, 100, 105, nil)
		for _, h := range []*sdktest.Harness{a, b} {
			sluicetest.Must(t, h.Checkpoint(1))
			sluicetest.Must(t, h.Complete(1))
		}
		send(t, a, 5, 10, nil)
		send(t, b, 105, 110, nil)
		var snaps []sdktest.Snapshot
		for _, h := range []*sdktest.Harness{a, b} {
			sluicetest.Must(t, h.Checkpoint(2))
			snap, ok := h.Snapshot(2)
			if !ok {
				t.Fatal("no snapshot of checkpoint 2")
			}
			snaps = append(snaps, snap)
		}
		send(t, a, 10, 15, nil) // open when the job stops: a file rolled and put
		if got := len(finalCounts(t, st)); got != 10 {
			t.Fatalf("before the rescale the final objects hold %d records, want checkpoint 1's 10", got)
		}
		if _, pending := objects(t, st); len(pending) != 2*3+1 {
			t.Fatalf("before the rescale %d pending objects, want 2 files and a marker per instance, and the rolled open file: %v", len(pending), pending)
		}

		// Init recovers both writers, then commits checkpoint 2.
		newSink(t, objfile.SinkConfig{Store: st, RollRecords: 4, Parallelism: 1},
			sdktest.WithParallelism(1), sdktest.WithSnapshot(snaps...))
		counts := finalCounts(t, st)
		for _, r := range [][2]int{{0, 10}, {100, 110}} {
			for i := r[0]; i < r[1]; i++ {
				if n := counts[strconv.Itoa(i)]; n != 1 {
					t.Errorf("record %d is %d times in the final objects, want once", i, n)
				}
			}
		}
		if len(counts) != 20 {
			t.Errorf("final objects hold %d distinct records, want 20: %v", len(counts), counts)
		}
		if _, pending := objects(t, st); len(pending) != 0 {
			t.Errorf("pending objects left after the rescale: %v", pending)
		}
	})
}
