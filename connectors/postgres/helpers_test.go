package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/postgres"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/sdk"
)

const waitTimeout = 90 * time.Second

// query returns one int64 that sql selects.
func query(t *testing.T, pg *pgtest.Server, sql string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int64
	if err := pg.Connect().QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// tryQuery is query that returns -1 when the server does not answer.
func tryQuery(pg *pgtest.Server, sql string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := pgxConnect(ctx, pg.DSN())
	if err != nil {
		return -1
	}
	defer c.Close(context.Background())
	var n int64
	if err := c.QueryRow(ctx, sql).Scan(&n); err != nil {
		return -1
	}
	return n
}

func mustSink(t *testing.T, cfg postgres.SinkConfig) sdk.Factory {
	t.Helper()
	f, err := postgres.NewSink(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// tables creates the tables of the tests: counts (an upsert target),
// events (an insert target without keys, so duplicates would show).
func tables(pg *pgtest.Server) {
	pg.Exec("CREATE TABLE counts (k text PRIMARY KEY, n bigint NOT NULL, seen timestamptz)")
	pg.Exec("CREATE TABLE events (i bigint NOT NULL, k text, doc jsonb)")
}
