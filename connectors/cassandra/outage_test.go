package cassandra_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/cassandra"
	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/internal/cqltest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

const waitTimeout = 90 * time.Second

// pipeline is generator → Cassandra: record i is row (k<i mod 50>, i).
func pipeline(t *testing.T, s *cqltest.Server, total int64, rate float64, maxBuffered int, m *cassandra.Metrics) []sdk.Factory {
	gen := func() sdk.Operator {
		return &generate.Source{Name: "gen", Stream: "in", Count: total, Rate: rate, Batch: 50,
			Make: func(i int64, _ *rand.Rand) sdk.Record {
				return sdk.Record{Value: []byte(fmt.Sprintf(`{"k": "k%d", "i": %d, "n": %d}`, i%50, i, i%1000))}
			}}
	}
	c := baseConfig(s)
	c.Columns, c.Metrics, c.MaxBufferedRows = []string{"k", "i", "n"}, m, maxBuffered
	return []sdk.Factory{gen, mustSink(t, c)}
}

func instanceStatus(rt *node.Runtime, op string) node.InstanceStatus {
	for _, st := range rt.Status() {
		if st.Name == op && len(st.Instances) > 0 {
			return st.Instances[0]
		}
	}
	return node.InstanceStatus{}
}

// TestCassandraOutage: the server refuses connections (stopped, its port
// closed) or answers nothing (stalled) for 10 s mid-stream, then comes
// back on the same port: every row arrives once, the outage shows in the
// sink's metrics and its instance's status while it lasts, and the writes
// resume. While refused, the sink buffers 2000 rows, then blocks its input
// (backpressure) until the server is back.
func TestCassandraOutage(t *testing.T) {
	for _, mode := range []cqltest.Mode{cqltest.Refusing, cqltest.Stalled} {
		name := map[cqltest.Mode]string{cqltest.Refusing: "stopped", cqltest.Stalled: "stalled"}[mode]
		t.Run(name, func(t *testing.T) {
			s := start(t, cqltest.Config{})
			const total = 10_000
			m := new(cassandra.Metrics)
			maxBuffered := 0
			if mode == cqltest.Refusing {
				maxBuffered = 2000
			}
			rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true,
				Logger: sluicetest.Logger(t)}, CheckpointInterval: 200 * time.Millisecond, KeepRunning: true}, pipeline(t, s, total, 700, maxBuffered, m)...)
			sluicetest.Must(t, err)
			t.Cleanup(func() { _ = rt.Stop(context.Background()) })
			sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "rows written", func() bool {
				return s.Count("app", "events") >= 1000
			})
			sluicetest.Must(t, s.SetMode(mode))
			sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the outage in the status", func() bool {
				return m.Down() != nil && strings.Contains(instanceStatus(rt, "store").LastError, "cluster unavailable")
			})
			during := s.Count("app", "events")
			// The outage lasts until it has been seen for 10 s.
			sluicetest.WaitEvery(t, waitTimeout, 50*time.Millisecond, "10 s of outage", func() bool {
				since := m.DownSince()
				return !since.IsZero() && time.Since(since) >= 10*time.Second
			})
			if err := m.Down(); err == nil || !strings.Contains(err.Error(), "for 10") {
				t.Fatalf("Metrics.Down() = %v, want the 10 s outage", err)
			}
			if n := s.Count("app", "events"); mode == cqltest.Refusing && n != during {
				t.Fatalf("%d rows written while the server refused connections (%d when it began)", n, during)
			}
			sluicetest.Must(t, s.SetMode(cqltest.Normal))
			sluicetest.WaitEvery(t, waitTimeout, 50*time.Millisecond, fmt.Sprintf("%d rows", total), func() bool {
				return s.Count("app", "events") >= total
			})
			if n := s.Count("app", "events"); n != total {
				t.Fatalf("%d rows, want %d: each once", n, total)
			}
			sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the outage over", func() bool { return m.Down() == nil })
			if m.Errors() == 0 {
				t.Fatal("no failed write counted")
			}
			t.Logf("%s: %d rows, %d writes received, %d failed flushes", name, total, s.Writes(), m.Errors())
		})
	}
}
