package actors_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/topology"
)

// TestEventsTellTheTopologysChanges: a node keeps the scale, kill and
// deploy of an operator among its cluster events (the console's timeline),
// each saying what changed, and not the topology it started with.
func TestEventsTellTheTopologysChanges(t *testing.T) {
	total := &atomic.Int64{}
	n := startNode(t, t.TempDir(), func() core.Operator { return &counter{name: "count", input: "words", parallelism: 2, total: total} })
	ctx := context.Background()
	// Each change waits for the node to adopt the one before: a node that
	// adopts two at once reports what the two changed together.
	change := func(what string, f func(topology.Topology) (topology.Topology, error)) {
		t.Helper()
		tp, err := topology.Update(ctx, n.Store(), 1, f)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		sluicetest.WaitFor(t, 10*time.Second, "the node to adopt the "+what, func() bool { return n.Topology().Version == tp.Version })
	}
	change("scale", func(tp topology.Topology) (topology.Topology, error) { return tp.Scale("count", 4, time.Now()) })
	change("kill", func(tp topology.Topology) (topology.Topology, error) { return tp.Kill("count", true) })
	change("deploy", func(tp topology.Topology) (topology.Topology, error) {
		next, _, err := tp.Deploy(topology.OperatorSpec{Kind: "count", Meta: core.Metadata{Name: "count", Inputs: []core.Input{{Stream: "words", Routing: core.GroupBy}}, Parallelism: 3}}, time.Now())
		return next, err
	})
	want := []struct {
		what   status.EventKind
		detail string
	}{
		{status.EventScaled, "2 → 4 instances"},
		{status.EventKilled, "state purged"},
		{status.EventDeployed, "kind count, 3 instances"},
	}
	var got []status.Event
	sluicetest.WaitFor(t, 10*time.Second, "three topology events", func() bool {
		got = got[:0]
		for _, e := range n.Events() {
			if e.Operator == "count" {
				got = append(got, e)
			}
		}
		return len(got) >= len(want)
	})
	if len(got) != len(want) {
		t.Fatalf("events %+v, want %d", got, len(want))
	}
	for i, w := range want {
		if e := got[i]; e.What != w.what || !strings.Contains(e.Detail, w.detail) || e.Node != "test" || e.Time.IsZero() {
			t.Errorf("event %d: %+v, want %s saying %q", i, e, w.what, w.detail)
		}
	}
}
