package bench

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/connectors/postgres"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// The PostgreSQL rows write records (i bigint, k text) into a fresh table
// of the server at TableConfig.PostgresDSN: through the sink (a generator
// feeding it, until every row is committed), and as the baselines a raw
// pgx COPY loop of the same batch size and one INSERT per row.

// pgRun numbers the runs' tables.
var pgRun atomic.Int64

// pgTable creates a fresh table and returns its name.
func pgTable(ctx context.Context, dsn string) (string, error) {
	name := fmt.Sprintf("bench_%d", pgRun.Add(1))
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, "CREATE TABLE "+name+" (i bigint NOT NULL, k text NOT NULL)")
	return name, err
}

func pgKey(i int64) string { return "key-" + strconv.FormatInt(i%10_000, 10) }

// PostgresSink runs generator → PostgreSQL sink (inserts, Map func,
// batches of 5000) under guarantee g and returns the records per second
// from start until the last row is committed.
func PostgresSink(dsn string, records int64, g sdk.Guarantee) (Result, error) {
	ctx := context.Background()
	dataDir, err := os.MkdirTemp("", "sluice-bench-pg-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dataDir)
	table, err := pgTable(ctx, dsn)
	if err != nil {
		return Result{}, err
	}
	m := new(postgres.Metrics)
	sink, err := postgres.NewSink(postgres.SinkConfig{Name: "pg", Inputs: []sdk.Input{{Stream: "rows"}}, URL: dsn, Table: table,
		Columns: []string{"i", "k"}, Metrics: m,
		Map: func(r sdk.Record) ([]any, error) {
			i, err := strconv.ParseInt(string(r.Value), 10, 64)
			return []any{i, string(r.Key)}, err
		}})
	if err != nil {
		return Result{}, err
	}
	gen := func() sdk.Operator {
		return &generate.Source{Name: "gen", Stream: "rows", Count: records, Make: func(i int64, _ *rand.Rand) sdk.Record {
			return sdk.Record{Key: []byte(pgKey(i)), Value: []byte(strconv.FormatInt(i, 10))}
		}}
	}
	start := time.Now()
	rt, err := node.Start(ctx, node.Config{NodeConfig: node.NodeConfig{DataDir: dataDir, NoSync: true, Logger: slog.New(slog.DiscardHandler)},
		Guarantee: g, KeepRunning: true}, gen, sink)
	if err != nil {
		return Result{}, err
	}
	defer rt.Stop(ctx)
	deadline := time.Now().Add(10 * time.Minute)
	for m.Rows() < records {
		if time.Now().After(deadline) {
			return Result{}, fmt.Errorf("postgres sink: %d of %d rows after 10 minutes (last error: %v)", m.Rows(), records, m.Down())
		}
		time.Sleep(5 * time.Millisecond) // polling a counter: nothing to wait on
	}
	return Result{Ops: records, Elapsed: time.Since(start)}, nil
}

// PostgresCopy is the raw pgx baseline: COPY of batches of 5000 rows, one
// transaction each, from one connection.
func PostgresCopy(dsn string, records int64) (Result, error) {
	ctx := context.Background()
	table, err := pgTable(ctx, dsn)
	if err != nil {
		return Result{}, err
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return Result{}, err
	}
	defer c.Close(ctx)
	start := time.Now()
	const batch = 5000
	rows := make([][]any, 0, batch)
	for i := int64(0); i < records; {
		rows = rows[:0]
		for ; i < records && len(rows) < batch; i++ {
			rows = append(rows, []any{i, pgKey(i)})
		}
		if _, err := c.CopyFrom(ctx, pgx.Identifier{table}, []string{"i", "k"}, pgx.CopyFromRows(rows)); err != nil {
			return Result{}, err
		}
	}
	return Result{Ops: records, Elapsed: time.Since(start)}, nil
}

// PostgresInserts is the naive baseline: one INSERT per row, each its own
// transaction.
func PostgresInserts(dsn string, records int64) (Result, error) {
	ctx := context.Background()
	table, err := pgTable(ctx, dsn)
	if err != nil {
		return Result{}, err
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return Result{}, err
	}
	defer c.Close(ctx)
	start := time.Now()
	q := "INSERT INTO " + table + " (i, k) VALUES ($1, $2)"
	for i := range records {
		if _, err := c.Exec(ctx, q, i, pgKey(i)); err != nil {
			return Result{}, err
		}
	}
	return Result{Ops: records, Elapsed: time.Since(start)}, nil
}

// postgresRows measures the sink (no guarantee and exactly-once) against
// the COPY loop and per-row inserts.
func (t *tabler) postgresRows() ([]row, error) {
	dsn := t.cfg.PostgresDSN
	if dsn == "" {
		return nil, fmt.Errorf("postgres: no server (TableConfig.PostgresDSN)")
	}
	n := int64(min(t.cfg.Records, 1_000_000))
	cp, err := t.measure("raw pgx COPY loop", func() (Result, error) { return PostgresCopy(dsn, n) })
	if err != nil {
		return nil, err
	}
	none, err := t.measure("PostgreSQL sink, no guarantee", func() (Result, error) {
		return PostgresSink(dsn, n, sdk.NoGuarantee)
	})
	if err != nil {
		return nil, err
	}
	eo, err := t.measure("PostgreSQL sink, exactly-once", func() (Result, error) {
		return PostgresSink(dsn, n, sdk.ExactlyOnce)
	})
	if err != nil {
		return nil, err
	}
	per, err := t.measure("per-row INSERT", func() (Result, error) { return PostgresInserts(dsn, n/20) })
	if err != nil {
		return nil, err
	}
	base := medianRate(cp)
	ratio := func(rs []Result) string { return fmt.Sprintf("%.2f×", medianRate(rs)/base) }
	return []row{
		{"raw pgx COPY loop (baseline)", human(base), "rows/s", "1.00×", "batches of 5000, one transaction each"},
		{"PostgreSQL sink, no guarantee", human(medianRate(none)), "rows/s", ratio(none), "generator → sink (COPY per 5000 rows and per Flush), until all committed"},
		{"PostgreSQL sink, exactly-once", human(medianRate(eo)), "rows/s", ratio(eo), "rows kept in state, written at each checkpoint's commit"},
		{"per-row INSERT", human(medianRate(per)), "rows/s", ratio(per), "one autocommit INSERT per row"},
	}, nil
}
