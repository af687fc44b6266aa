package cdc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/sluicehq/sluice/connectors/postgres/cdc"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
)

func TestConfigRefusedNamingTheField(t *testing.T) {
	ok := cdc.SourceConfig{Name: "cdc", Output: "changes", URL: "postgres://u:p@127.0.0.1:1/db", Slot: "s", Publication: "p"}
	for _, tc := range []struct {
		field string
		mod   func(*cdc.SourceConfig)
	}{
		{"Name", func(c *cdc.SourceConfig) { c.Name = "" }},
		{"Output", func(c *cdc.SourceConfig) { c.Output = "" }},
		{"URL", func(c *cdc.SourceConfig) { c.URL = "" }},
		{"URL", func(c *cdc.SourceConfig) { c.URL = "postgres://u:secret@127.0.0.1:notaport/db" }},
		{"Slot", func(c *cdc.SourceConfig) { c.Slot = "" }},
		{"Slot", func(c *cdc.SourceConfig) { c.Slot = "Bad-Name" }},
		{"Publication", func(c *cdc.SourceConfig) { c.Publication = "" }},
		{"Publication", func(c *cdc.SourceConfig) { c.Publication = "x;drop" }},
		{"Tables", func(c *cdc.SourceConfig) { c.Tables = []string{"items"} }},
		{"Tables[1]", func(c *cdc.SourceConfig) { c.CreatePublication, c.Tables = true, []string{"items", "a.b.c"} }},
		{"PollTimeout", func(c *cdc.SourceConfig) { c.PollTimeout = -1 }},
		{"MaxPollChanges", func(c *cdc.SourceConfig) { c.MaxPollChanges = -1 }},
		{"ConnectTimeout", func(c *cdc.SourceConfig) { c.ConnectTimeout = -1 }},
		{"StatusInterval", func(c *cdc.SourceConfig) { c.StatusInterval = -1 }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			_, err := cdc.NewSource(cfg)
			var ce *cdc.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field || !errors.Is(err, cdc.ErrConfig) {
				t.Fatalf("NewSource: %v; want a ConfigError naming %s", err, tc.field)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
	if _, err := cdc.NewSource(ok); err != nil {
		t.Fatalf("a good config refused: %v", err)
	}
}

// TestServerRefusals: a server without wal_level=logical, a missing slot
// and a missing publication (not to be created) are refused naming the
// setting; none is transient.
func TestServerRefusals(t *testing.T) {
	plain := pgtest.Start(t)
	pg := logical(t)
	for _, tc := range []struct {
		name, want string
		cfg        func() cdc.SourceConfig
	}{
		{"wal_level", "wal_level = logical", func() cdc.SourceConfig { return config(plain, nil) }},
		{"publication", "Publication: no publication", func() cdc.SourceConfig {
			c := config(pg, nil)
			c.CreatePublication, c.Tables = false, nil
			return c
		}},
		{"slot", "Slot: no replication slot", func() cdc.SourceConfig { c := config(pg, nil); c.CreateSlot = false; return c }},
		{"password", "check URL", func() cdc.SourceConfig {
			c := config(pg, nil)
			c.URL = strings.Replace(c.URL, pgtest.Password, "wrong", 1)
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := harness(t, tc.cfg())
			err := h.Poll()
			if !errors.Is(err, cdc.ErrRefused) || errors.Is(err, sdk.ErrTransient) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Poll: %v; want a refusal saying %q", err, tc.want)
			}
		})
	}
}

// TestChangesInCommitOrder: inserts, updates and deletes in several
// transactions, two of them interleaved, come out one record per change,
// grouped by transaction in commit order, keyed by the primary key.
func TestChangesInCommitOrder(t *testing.T) {
	pg := logical(t)
	h := harness(t, config(pg, nil))
	if err := h.Poll(); err != nil { // creates the publication and the slot
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := pg.Connect(), pg.Connect()
	run := func(sqls ...string) {
		for _, q := range sqls {
			if _, err := a.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	runB := func(sqls ...string) {
		for _, q := range sqls {
			if _, err := b.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	run("INSERT INTO items VALUES (1, 'one', 10), (2, 'two', 20)")
	// Two transactions interleaved: b commits first.
	run("BEGIN", "INSERT INTO items VALUES (3, 'three', 30)")
	runB("BEGIN", "UPDATE items SET n = 21 WHERE id = 2", "DELETE FROM items WHERE id = 1")
	run("UPDATE items SET name = NULL WHERE id = 3")
	runB("COMMIT")
	run("COMMIT")
	run("UPDATE items SET id = 4 WHERE id = 3") // a key change: the old key differs
	run("BEGIN", "INSERT INTO items VALUES (5, 'five', 50)", "DELETE FROM items WHERE id = 5", "COMMIT")
	want := []string{
		`public.items insert 1 [id=1 n=10 name="one"] old[]`,
		`public.items insert 2 [id=2 n=20 name="two"] old[]`,
		`public.items update 2 [id=2 n=21 name="two"] old[id=2]`,
		`public.items delete 1 [] old[id=1]`,
		`public.items insert 3 [id=3 n=30 name="three"] old[]`,
		`public.items update 3 [id=3 n=30 name=null] old[id=3]`,
		`public.items update 4 [id=4 n=30 name=null] old[id=3]`,
		`public.items insert 5 [id=5 n=50 name="five"] old[]`,
		`public.items delete 5 [] old[id=5]`,
	}
	got := pollUntil(t, h, len(want))
	var lines []string
	for _, r := range got {
		lines = append(lines, summary(t, r))
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// Each transaction's records share its LSN and commit time, which is
	// the event time; LSNs grow.
	txns := [][]int{{0, 1}, {2, 3}, {4, 5}, {6}, {7, 8}}
	var last pglogrepl.LSN
	for _, idx := range txns {
		first := change(t, got[idx[0]])
		lsn, err := pglogrepl.ParseLSN(first.LSN)
		sluicetest.Must(t, err)
		if lsn <= last {
			t.Fatalf("transaction at %v after %v", lsn, last)
		}
		last = lsn
		for _, i := range idx {
			c := change(t, got[i])
			if c.LSN != first.LSN || !c.CommitTime.Equal(first.CommitTime) || !got[i].EventTime.Equal(first.CommitTime) {
				t.Fatalf("record %d: lsn %s commit %v event %v; want its transaction's %s %v", i, c.LSN, c.CommitTime, got[i].EventTime, first.LSN, first.CommitTime)
			}
		}
	}
	if err := h.Poll(); err != nil {
		t.Fatal(err)
	}
	if extra := h.Take("changes"); len(extra) != 0 {
		t.Fatalf("%d records more than the changes", len(extra))
	}
}
