package cdc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/sluicehq/sluice/connectors/postgres/cdc"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

const waitTimeout = 90 * time.Second

// logical starts a server with wal_level=logical and the table items
// (id int primary key, name text, n bigint).
func logical(t *testing.T) *pgtest.Server {
	t.Helper()
	pg := pgtest.Start(t, pgtest.Logical())
	pg.Exec("CREATE TABLE items (id int PRIMARY KEY, name text, n bigint)")
	return pg
}

// config is the source's configuration for the tests: slot and
// publication created, for the table items.
func config(pg *pgtest.Server, stats *cdc.Stats) cdc.SourceConfig {
	return cdc.SourceConfig{Name: "cdc", Output: "changes", URL: pg.DSN(), Slot: "sluice_test", CreateSlot: true,
		Publication: "sluice_test", CreatePublication: true, Tables: []string{"public.items"}, Stats: stats,
		ConnectTimeout: 3 * time.Second}
}

func harness(t *testing.T, cfg cdc.SourceConfig, opts ...sdktest.Option) *sdktest.Harness {
	t.Helper()
	f, err := cdc.NewSource(cfg)
	sluicetest.Must(t, err)
	h, err := sdktest.New(f, append([]sdktest.Option{sdktest.WithLogger(sluicetest.Logger(t))}, opts...)...)
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// pollUntil polls h until it produced at least n records in all, and
// returns them (failing on a Poll error or at the deadline).
func pollUntil(t *testing.T, h *sdktest.Harness, n int) []sdk.Record {
	t.Helper()
	var out []sdk.Record
	deadline := time.Now().Add(waitTimeout)
	for len(out) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d records after %v, want %d", len(out), waitTimeout, n)
		}
		if err := h.Poll(); err != nil && !errors.Is(err, sdk.ErrTransient) {
			t.Fatalf("Poll: %v", err)
		}
		out = append(out, h.Take("changes")...)
	}
	return out
}

// change decodes a record's value.
func change(t *testing.T, r sdk.Record) cdc.Change {
	t.Helper()
	var c cdc.Change
	if err := json.Unmarshal(r.Value, &c); err != nil {
		t.Fatalf("decode %s: %v", r.Value, err)
	}
	return c
}

// summary is a change in a line: "op key columns|old_key".
func summary(t *testing.T, r sdk.Record) string {
	c := change(t, r)
	var cols, old []string
	for _, k := range sortedKeys(c.Columns) {
		cols = append(cols, k+"="+string(c.Columns[k]))
	}
	for _, k := range sortedKeys(c.OldKey) {
		old = append(old, k+"="+string(c.OldKey[k]))
	}
	return fmt.Sprintf("%s %s %s [%s] old[%s]", c.Table, c.Op, r.Key, strings.Join(cols, " "), strings.Join(old, " "))
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// slotLSN returns the slot's confirmed_flush_lsn (0 if it has none yet).
func slotLSN(t *testing.T, pg *pgtest.Server, slot string) pglogrepl.LSN {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var s *string
	err := pg.Connect().QueryRow(ctx, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&s)
	if err != nil {
		t.Fatalf("read slot %s: %v", slot, err)
	}
	if s == nil {
		return 0
	}
	lsn, err := pglogrepl.ParseLSN(*s)
	sluicetest.Must(t, err)
	return lsn
}

// count returns the one integer sql selects, or -1 while the server
// does not answer.
func count(pg *pgtest.Server, sql string) int64 {
	n, err := pg.QueryInt(sql)
	if err != nil {
		return -1
	}
	return n
}
