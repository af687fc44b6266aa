//go:build !race

package actors_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
)

// Large records cross nodes. gRPC takes at most 4 MB in one message by
// default, and took none of these: 256 records of 32 KiB are a batch of
// 8 MiB, and protoactor bundles batches; a record of 3 MiB is alone in its
// batch (BatchBytes), but several such batches were bundled. The source
// starts once the counter's instances are on both nodes, so that records
// cross.
func TestClusterLargeRecordsCrossNodes(t *testing.T) {
	for _, tc := range []struct {
		name          string
		size, records int
	}{{"32 KiB records", 32 << 10, 2000}, {"3 MiB records", 3 << 20, 24}} {
		t.Run(tc.name, func(t *testing.T) {
			var open atomic.Bool
			c := newTestCluster(t,
				func() core.Operator {
					return &sluicetest.Gen{Name: "gen", Stream: "words", Count: tc.records, Key: sluicetest.Key(500), Parallelism: 2,
						ValueSize: tc.size, Gate: func(int) bool { return open.Load() }}
				},
				func() core.Operator { return &counter{name: "count", input: "words", parallelism: 4} },
			)
			a, b := c.start("a"), c.start("b")
			sluicetest.WaitFor(t, time.Minute, "the counter's instances on both nodes", func() bool {
				return running(a, "count") > 0 && running(b, "count") > 0 && running(a, "count")+running(b, "count") == 4
			})
			open.Store(true)
			sluicetest.WaitFor(t, time.Minute, "every record counted", func() bool { return c.processed("count") == int64(tc.records) })
		})
	}
}
