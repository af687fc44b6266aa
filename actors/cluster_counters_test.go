//go:build !race

package actors_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
)

// Records delivered over the wire (through the dispatcher) are taken off
// the destination instance's Queued too.
func TestClusterQueuedReturnsToZeroAcrossNodes(t *testing.T) {
	const records = 20_000
	c := newTestCluster(t,
		func() core.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "words", Count: records, Key: sluicetest.Key(500), Parallelism: 2}
		},
		func() core.Operator { return &counter{name: "count", input: "words", parallelism: 4} },
	)
	c.start("a")
	c.start("b")
	sluicetest.WaitFor(t, time.Minute, "every record counted", func() bool { return c.processed("count") == records })
	for _, n := range c.nodes {
		waitDrained(t, n)
	}
}

// A source that moves to another node keeps counting what it produced
// from where it was: the sum over the running instances reaches what was
// produced in total (the released instances, which keep their own count
// for a while, are not counted).
func TestClusterProducedMovesWithInstance(t *testing.T) {
	const par = 4
	limit := &atomic.Int64{}
	limit.Store(1000)
	c := newTestCluster(t,
		func() core.Operator { return &gated{par: par, limit: limit} },
		func() core.Operator { return &counter{name: "count", input: "words", parallelism: 2} },
	)
	a := c.start("a")
	sluicetest.WaitFor(t, time.Minute, "first records counted on a", func() bool { return processed(a, "count") == par*1000 })
	if got := producedRunning(a, "gen"); got != par*1000 {
		t.Fatalf("gen produced %d on a, want %d", got, par*1000)
	}
	b := c.start("b")
	sluicetest.WaitFor(t, time.Minute, "gen instances placed on both nodes", func() bool {
		onA, onB := running(a, "gen"), running(b, "gen")
		return onA+onB == par && onA > 0 && onB > 0
	})
	limit.Store(3000)
	sluicetest.WaitFor(t, time.Minute, "every record counted", func() bool { return c.processed("count") == par*3000 })
	if got := producedRunning(a, "gen") + producedRunning(b, "gen"); got != par*3000 {
		c.dump()
		t.Fatalf("gen's running instances produced %d over their life, want %d (a moved instance must keep its count)", got, par*3000)
	}
}
