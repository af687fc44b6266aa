package actors_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
)

// queuedByInstance returns the Queued of every instance on n, by
// "operator/epoch.index", and their sum.
func queuedByInstance(n *actors.Node) (map[string]int64, int64) {
	out := make(map[string]int64)
	var sum int64
	for _, op := range n.Status() {
		for _, in := range op.Instances {
			out[fmt.Sprintf("%s/%d.%d", op.Name, in.Epoch, in.Index)] = in.Queued
			sum += in.Queued
		}
	}
	return out, sum
}

// waitDrained waits until nothing is queued on n, per node and per
// instance: every record delivered was taken off both counters.
func waitDrained(t *testing.T, n *actors.Node) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		per, sum := queuedByInstance(n)
		if sum == 0 && n.Queued() == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the pipeline drained: node queued %d, instances queued %v", n.Queued(), per)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestQueuedReturnsToZeroAfterDraining(t *testing.T) {
	const records = 20_000
	n := startNode(t, t.TempDir(),
		func() core.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "words", Count: records, Key: sluicetest.Key(500)}
		},
		func() core.Operator { return &counter{name: "count", input: "words", parallelism: 3} },
	)
	sluicetest.WaitFor(t, time.Minute, "every record counted", func() bool { return processed(n, "count") == records })
	waitDrained(t, n)
}
