package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/connectors/postgres"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

const keys = 50

// counter counts words per key and produces, for every word, the key's
// new count (to "counts") and the word itself (to "events"). It panics
// once, at word panicAt, if set.
type counter struct{ panicAt *atomic.Int64 }

func (c *counter) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "count", Inputs: []sdk.Input{{Stream: "words", Routing: sdk.GroupBy}},
		Outputs: []string{"counts", "events"}, Parallelism: 2}
}
func (c *counter) Init(sdk.Context) error { return nil }
func (c *counter) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	if c.panicAt != nil && string(rec.Value) == strconv.FormatInt(c.panicAt.Load(), 10) && c.panicAt.CompareAndSwap(c.panicAt.Load(), -1) {
		panic("injected failure")
	}
	n, err := sdk.GetInt64(ctx.State(), rec.Key)
	if err != nil && err != sdk.ErrNotFound {
		return err
	}
	n++
	sdk.PutInt64(ctx.State(), rec.Key, n)
	if err := ctx.Produce("counts", sdk.Record{Key: rec.Key, Value: []byte(strconv.FormatInt(n, 10))}); err != nil {
		return err
	}
	doc := fmt.Sprintf(`{"i": %s, "k": %q}`, rec.Value, rec.Key)
	return ctx.Produce("events", sdk.Record{Key: rec.Key, Value: []byte(doc)})
}
func (c *counter) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// pipeline is generator → count per key → PostgreSQL: the counts upserted
// into counts, the words inserted into events.
func pipeline(pg *pgtest.Server, total int64, rate float64, panicAt *atomic.Int64, m *postgres.Metrics) []sdk.Factory {
	gen := func() sdk.Operator {
		return &generate.Source{Name: "gen", Stream: "words", Count: total, Rate: rate, Batch: 100,
			Make: func(i int64, _ *rand.Rand) sdk.Record {
				return sdk.Record{Key: []byte("k" + strconv.FormatInt(i%keys, 10)), Value: []byte(strconv.FormatInt(i, 10))}
			}}
	}
	ups, _ := postgres.NewSink(postgres.SinkConfig{Name: "store-counts", Inputs: []sdk.Input{{Stream: "counts"}}, URL: pg.DSN(),
		Table: "counts", Columns: []string{"k", "n"}, KeyColumns: []string{"k"}, WriteTimeout: 3 * time.Second, Metrics: m,
		Map: func(r sdk.Record) ([]any, error) {
			n, err := strconv.ParseInt(string(r.Value), 10, 64)
			return []any{string(r.Key), n}, err
		}})
	ins, _ := postgres.NewSink(postgres.SinkConfig{Name: "store-events", Inputs: []sdk.Input{{Stream: "events"}}, URL: pg.DSN(),
		Table: "events", Columns: []string{"i", "k"}, WriteTimeout: 3 * time.Second, Metrics: m})
	return []sdk.Factory{gen, func() sdk.Operator { return &counter{panicAt: panicAt} }, ups, ins}
}

func startEO(t *testing.T, dir string, ops []sdk.Factory) *node.Runtime {
	t.Helper()
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: dir, NoSync: true, Logger: sluicetest.Logger(t)},
		CheckpointInterval: 200 * time.Millisecond, KeepRunning: true}, ops...)
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	return rt
}

// checkExact fails unless events holds every word 0..total-1 once and
// counts every key's exact count.
func checkExact(t *testing.T, pg *pgtest.Server, total int64) {
	t.Helper()
	sluicetest.WaitEvery(t, waitTimeout, 50*time.Millisecond, fmt.Sprintf("%d events", total), func() bool {
		return tryQuery(pg, "SELECT count(*) FROM events") >= total
	})
	sluicetest.WaitEvery(t, waitTimeout, 50*time.Millisecond, "every key's final count", func() bool {
		return tryQuery(pg, "SELECT coalesce(sum(n), 0) FROM counts") >= total
	})
	if n, d := query(t, pg, "SELECT count(*) FROM events"), query(t, pg, "SELECT count(DISTINCT i) FROM events WHERE i >= 0 AND i < "+strconv.FormatInt(total, 10)); n != total || d != total {
		t.Fatalf("events: %d rows, %d distinct words of %d; want each word once", n, d, total)
	}
	per := total / keys
	if n := query(t, pg, fmt.Sprintf("SELECT count(*) FROM counts WHERE n = %d", per)); n != keys {
		t.Fatalf("%d of %d keys count %d; want all", n, keys, per)
	}
	if n := query(t, pg, "SELECT count(*) FROM counts"); n != keys {
		t.Fatalf("%d keys in counts, want %d", n, keys)
	}
}

// TestExactlyOnceThroughAFailureAndARestart: a panic in the counter
// (rolled back, retried) and a stop and start of the runtime mid-stream
// leave both tables exact.
func TestExactlyOnceThroughAFailureAndARestart(t *testing.T) {
	pg := pgtest.Start(t)
	tables(pg)
	const total = 20_000
	var panicAt atomic.Int64
	panicAt.Store(total / 4)
	dir := t.TempDir()
	m := new(postgres.Metrics)
	rt := startEO(t, dir, pipeline(pg, total, 4000, &panicAt, m))
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "a third of the events committed", func() bool {
		return tryQuery(pg, "SELECT count(*) FROM events") >= total/3
	})
	if panicAt.Load() != -1 {
		t.Fatal("the injected failure did not happen")
	}
	sluicetest.Must(t, rt.Stop(context.Background()))
	mid := query(t, pg, "SELECT count(*) FROM events")
	if mid >= total {
		t.Fatalf("the stream ended (%d events) before the restart", mid)
	}
	startEO(t, dir, pipeline(pg, total, 4000, nil, m))
	checkExact(t, pg, total)
	if n := query(t, pg, "SELECT count(*) FROM sluice_progress WHERE sink LIKE '%/store-%'"); n != 2 {
		t.Fatalf("%d progress rows, want one per sink instance (2)", n)
	}
}

// TestPostgresOutage: PostgreSQL stopped for 10 s and started again
// mid-stream: nothing lost, nothing twice; the outage shows in the sink's
// metrics and in its instance's status while it lasts.
func TestPostgresOutage(t *testing.T) {
	for _, kind := range []string{"stopped", "paused"} {
		t.Run(kind, func(t *testing.T) {
			pg := pgtest.Start(t)
			tables(pg)
			const total = 12_000
			m := new(postgres.Metrics)
			rt := startEO(t, t.TempDir(), pipeline(pg, total, 800, nil, m))
			sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "events committed", func() bool {
				return tryQuery(pg, "SELECT count(*) FROM events") >= 1000
			})
			if kind == "stopped" {
				pg.Stop()
			} else {
				pg.Pause()
			}
			sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the outage in the status", func() bool {
				st := instanceStatus(rt, "store-events")
				return m.Down() != nil && strings.Contains(st.LastError, "server unavailable")
			})
			// The outage lasts until it has been seen for 10 s.
			sluicetest.WaitEvery(t, waitTimeout, 50*time.Millisecond, "10 s of outage", func() bool {
				since := m.DownSince()
				return !since.IsZero() && time.Since(since) >= 10*time.Second
			})
			if err := m.Down(); err == nil || !strings.Contains(err.Error(), "for 10") {
				t.Fatalf("Metrics.Down() = %v, want the 10 s outage", err)
			}
			if kind == "stopped" {
				pg.Start()
			} else {
				pg.Resume()
			}
			checkExact(t, pg, total)
			sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the outage over", func() bool { return m.Down() == nil })
			if m.Errors() == 0 {
				t.Fatal("no failed write counted")
			}
		})
	}
}

func instanceStatus(rt *node.Runtime, op string) node.InstanceStatus {
	for _, st := range rt.Status() {
		if st.Name == op && len(st.Instances) > 0 {
			return st.Instances[0]
		}
	}
	return node.InstanceStatus{}
}
