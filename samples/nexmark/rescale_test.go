package nexmark_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/samples/nexmark"
	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/topology"
)

// TestQueriesExactAcrossRescale runs a windowed query (q7: two tumbling
// window aggregations) and a keyed one (q4: the auctions and their best
// bids in keyed state, with event timers at their expiry, then a running
// average per category) on the embedded runtime under exactly-once
// (checkpoints every 200 ms), paced so that the run lasts several
// seconds, and rescales every operator but the source live, through the
// topology's Scale (what `sluice scale` and the autoscaler call): 2 → 4
// once answers have come out, then 4 → 1. Open windows, auctions, timers
// and averages move with their key groups; the answers must still be
// exactly the exact answer.
func TestQueriesExactAcrossRescale(t *testing.T) {
	cfg := nexmark.Config{Events: 60000, EventsPerSecond: 1000, Seed: 13, Parallelism: 2, Batch: 100, Rate: 2500}
	for _, name := range []string{"q7", "q4"} {
		t.Run(name, func(t *testing.T) {
			q, _ := nexmark.QueryNamed(name)
			want := q.Expected(cfg)
			fs, err := q.Build(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var scaled []string
			for _, f := range fs {
				if n := f().Metadata().Name; n != nexmark.SourceName {
					scaled = append(scaled, n)
				}
			}
			sink := q.NewSink()
			rt := startRuntime(t, append(fs, sink.Factory()))
			answered := 0
			for _, n := range []int{4, 1} {
				sluicetest.WaitFor(t, time.Minute, "more answers", func() bool { return sink.Len() > answered })
				answered = sink.Len()
				rescale(t, rt, scaled, n)
				if finished(rt, sink.Name()) {
					t.Fatalf("the run ended before the rescale to %d", n)
				}
				t.Logf("rescaled to %d after %d answers (of %d)", n, answered, len(want))
			}
			checkFinished(t, rt, q, sink, want)
		})
	}
}

// rescale sets the parallelism of the named operators to n in the
// runtime's topology and waits until each runs n instances of its new
// epoch.
func rescale(t *testing.T, rt *node.Runtime, names []string, n int) {
	t.Helper()
	for _, name := range names {
		if _, err := topology.Update(context.Background(), rt.Node().Store(), 5, func(cur topology.Topology) (topology.Topology, error) {
			return cur.Scale(name, n, time.Now())
		}); err != nil {
			t.Fatalf("scale %s to %d: %v", name, n, err)
		}
	}
	sluicetest.WaitFor(t, time.Minute, "the rescaled instances running", func() bool {
		for _, st := range rt.Status() {
			if !slices.Contains(names, st.Name) {
				continue
			}
			running := 0
			for _, in := range st.Instances {
				if in.Epoch == st.Epoch && (in.State == status.StateRunning || in.Finished) {
					running++
				}
			}
			if st.Parallelism != n || running != n {
				return false
			}
		}
		return true
	})
}
