package cdc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/connectors/postgres"
	"github.com/sluicehq/sluice/connectors/postgres/cdc"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// copier turns each change of items into the row id it inserted, for the
// copies table; it panics once, at id panicAt, if set.
type copier struct{ panicAt *atomic.Int64 }

func (c *copier) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "copy", Inputs: []sdk.Input{{Stream: "changes"}}, Outputs: []string{"ids"}, Parallelism: 2}
}
func (c *copier) Init(sdk.Context) error { return nil }
func (c *copier) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	var ch cdc.Change
	if err := json.Unmarshal(rec.Value, &ch); err != nil {
		return fmt.Errorf("%w: %v", sdk.ErrBadRecord, err)
	}
	id := string(ch.Columns["id"])
	if c.panicAt != nil && id == strconv.FormatInt(c.panicAt.Load(), 10) && c.panicAt.CompareAndSwap(c.panicAt.Load(), -1) {
		panic("injected failure")
	}
	return ctx.Produce("ids", sdk.Record{Key: rec.Key, Value: []byte(id)})
}
func (c *copier) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// replication is items → CDC → copier → PostgreSQL (the copies table,
// one inserted row per change).
func replication(t *testing.T, pg *pgtest.Server, stats *cdc.Stats, m *postgres.Metrics, panicAt *atomic.Int64) []sdk.Factory {
	t.Helper()
	src, err := cdc.NewSource(config(pg, stats))
	sluicetest.Must(t, err)
	sink, err := postgres.NewSink(postgres.SinkConfig{Name: "store-copies", Inputs: []sdk.Input{{Stream: "ids"}}, URL: pg.DSN(),
		Table: "copies", Columns: []string{"id"}, WriteTimeout: 3 * time.Second, Metrics: m,
		Map: func(r sdk.Record) ([]any, error) {
			n, err := strconv.ParseInt(string(r.Value), 10, 64)
			return []any{n}, err
		}})
	sluicetest.Must(t, err)
	return []sdk.Factory{src, func() sdk.Operator { return &copier{panicAt: panicAt} }, sink}
}

func startReplication(t *testing.T, dir string, ops []sdk.Factory) *node.Runtime {
	t.Helper()
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: dir, NoSync: true, Logger: sluicetest.Logger(t)},
		CheckpointInterval: 200 * time.Millisecond, KeepRunning: true}, ops...)
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	return rt
}

// writer inserts rows into items, one transaction of 10 rows at a time,
// until it has inserted total rows, retrying while the server is away.
type writer struct {
	pg    *pgtest.Server
	total int
	done  atomic.Int64 // rows committed
	stop  chan struct{}
	wg    sync.WaitGroup
}

func startWriter(t *testing.T, pg *pgtest.Server, total int) *writer {
	w := &writer{pg: pg, total: total, stop: make(chan struct{})}
	w.wg.Add(1)
	go w.run()
	t.Cleanup(func() { close(w.stop); w.wg.Wait() })
	return w
}

func (w *writer) run() {
	defer w.wg.Done()
	tick := time.NewTicker(5 * time.Millisecond) // paced: the run outlasts a restart
	defer tick.Stop()
	for next := 0; next < w.total; {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		var vals []string
		for i := next; i < min(next+10, w.total); i++ {
			vals = append(vals, fmt.Sprintf("(%d, 'x', %d)", i, i))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := w.exec(ctx, "INSERT INTO items VALUES "+strings.Join(vals, ", ")+" ON CONFLICT (id) DO NOTHING")
		cancel()
		if err != nil {
			continue // the server is away: the same rows again (a retry of rows that did commit changes nothing)
		}
		next += len(vals)
		w.done.Store(int64(next))
	}
}

func (w *writer) exec(ctx context.Context, sql string) (int64, error) {
	conn, err := pgx.Connect(ctx, w.pg.DSN())
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	tag, err := conn.Exec(ctx, sql)
	return tag.RowsAffected(), err
}

// checkCopies fails unless copies holds every id 0..total-1 exactly once.
func checkCopies(t *testing.T, pg *pgtest.Server, total int64) {
	t.Helper()
	sluicetest.WaitEvery(t, waitTimeout, 50*time.Millisecond, fmt.Sprintf("%d copies", total), func() bool {
		return count(pg, "SELECT count(*) FROM copies") >= total
	})
	n := count(pg, "SELECT count(*) FROM copies")
	d := count(pg, fmt.Sprintf("SELECT count(DISTINCT id) FROM copies WHERE id >= 0 AND id < %d", total))
	if n != total || d != total {
		t.Fatalf("copies: %d rows, %d distinct ids of %d; want each id once", n, d, total)
	}
}

// TestReplicationExactlyOnce: the changes of a table, read by the CDC
// source on the embedded runtime under exactly-once, through a failing
// operator (rolled back to the last checkpoint: the source replays from
// its position there), a stop and start of the runtime mid-stream, and
// PostgreSQL itself stopped for 10 s and started again, land in another
// table through the PostgreSQL sink once each. While the server is away
// the outage shows in the sink's metrics, and in the source's Stats when
// the source is reading (not held back by the sink's backlog).
func TestReplicationExactlyOnce(t *testing.T) {
	pg := logical(t)
	pg.Exec("CREATE TABLE copies (id bigint NOT NULL)")
	const total = 3000
	var panicAt atomic.Int64
	panicAt.Store(total / 5)
	dir := t.TempDir()
	stats, m := new(cdc.Stats), new(postgres.Metrics)
	rt := startReplication(t, dir, replication(t, pg, stats, m, &panicAt))
	// The slot sees what commits after it was made: the source makes it
	// as it starts.
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the slot made", func() bool {
		return count(pg, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'sluice_test'") == 1
	})
	w := startWriter(t, pg, total)

	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "a third of the rows copied", func() bool {
		return count(pg, "SELECT count(*) FROM copies") >= total/3
	})
	if panicAt.Load() != -1 {
		t.Fatal("the injected failure did not happen")
	}
	sluicetest.Must(t, rt.Stop(context.Background()))
	if w.done.Load() >= total {
		t.Fatalf("the writer finished (%d rows) before the restart", w.done.Load())
	}
	startReplication(t, dir, replication(t, pg, stats, m, nil))
	at := w.done.Load()
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "rows written after the restart copied", func() bool {
		return count(pg, "SELECT count(*) FROM copies") >= at+100
	})

	// The outage shows where the server is being asked for something: in
	// the sink's metrics (its commits fail) and, unless the source is held
	// back by the sink's backlog and so not reading, in the source's stats.
	pg.Stop()
	down := func() bool { return m.Down() != nil || stats.Down() != nil }
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the outage in the metrics", down)
	downAt := time.Now()
	sluicetest.WaitEvery(t, waitTimeout, 50*time.Millisecond, "10 s of outage", func() bool {
		if !down() {
			t.Fatal("the outage left the metrics while the server was still stopped")
		}
		return time.Since(downAt) >= 10*time.Second
	})
	if err := stats.Down(); err != nil && !errors.Is(err, cdc.ErrUnavailable) {
		t.Fatalf("Stats.Down() = %v, want ErrUnavailable", err)
	}
	pg.Start()
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the writer done", func() bool { return w.done.Load() >= total })
	checkCopies(t, pg, total)
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the outage over", func() bool { return !down() })
	if stats.Errors()+m.Errors() == 0 {
		t.Fatal("no failure counted during the outage")
	}
}
