package pgtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/pgtest"
)

func count(t *testing.T, pg *pgtest.Server) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := pg.Connect().QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}

func TestStopStartKeepsDataAndPort(t *testing.T) {
	pg := pgtest.Start(t)
	pg.Exec("CREATE TABLE t (k int PRIMARY KEY)")
	pg.Exec("INSERT INTO t SELECT generate_series(1, 10)")
	port := pg.Port()
	pg.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := pgx.Connect(ctx, pg.DSN()); err == nil {
		c.Close(ctx)
		t.Fatal("connected to a stopped server")
	}
	pg.Start()
	if pg.Port() != port {
		t.Fatalf("port %d after the restart, want %d", pg.Port(), port)
	}
	if n := count(t, pg); n != 10 {
		t.Fatalf("%d rows after the restart, want 10", n)
	}
}

func TestPauseHangsConnections(t *testing.T) {
	pg := pgtest.Start(t)
	pg.Exec("CREATE TABLE t (k int)")
	pg.Pause()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if c, err := pgx.Connect(ctx, pg.DSN()); err == nil {
		c.Close(context.Background())
		t.Fatal("connected to a paused server")
	}
	pg.Resume()
	if n := count(t, pg); n != 0 {
		t.Fatalf("%d rows, want 0", n)
	}
}

func TestWrongPasswordIsRefused(t *testing.T) {
	pg := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = "wrong"
	if c, err := pgx.ConnectConfig(ctx, cfg); err == nil {
		c.Close(ctx)
		t.Fatal("a wrong password was accepted")
	}
}

func TestLogicalSetsWALLevel(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []pgtest.Options
		want string
	}{
		{"default", nil, "replica"},
		{"logical", []pgtest.Options{pgtest.Logical()}, "logical"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := pgtest.Start(t, tc.opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var got string
			if err := pg.Connect().QueryRow(ctx, "SHOW wal_level").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("wal_level %q, want %q", got, tc.want)
			}
		})
	}
}
