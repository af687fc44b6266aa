package postgres_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/postgres"
	"github.com/sluicehq/sluice/internal/pgtest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

func baseConfig(dsn string) postgres.SinkConfig {
	return postgres.SinkConfig{Name: "store", Inputs: []sdk.Input{{Stream: "in"}}, URL: dsn,
		Table: "events", Columns: []string{"i", "k", "doc"}, WriteTimeout: 5 * time.Second}
}

func TestValidateNamesTheField(t *testing.T) {
	ok := baseConfig("postgres://u:p@127.0.0.1:5432/db")
	for _, tc := range []struct {
		field string
		edit  func(*postgres.SinkConfig)
	}{
		{"Name", func(c *postgres.SinkConfig) { c.Name = "" }},
		{"Inputs", func(c *postgres.SinkConfig) { c.Inputs = nil }},
		{"Inputs[0].Stream", func(c *postgres.SinkConfig) { c.Inputs = []sdk.Input{{}} }},
		{"URL", func(c *postgres.SinkConfig) { c.URL = "" }},
		{"URL", func(c *postgres.SinkConfig) { c.URL = "postgres://u:p@127.0.0.1:notaport/db" }},
		{"URL", func(c *postgres.SinkConfig) { c.URL = "postgres://u:p@h/db?sslmode=sometimes" }},
		{"TLS.Mode", func(c *postgres.SinkConfig) { c.TLS.Mode = "always" }},
		{"TLS.Cert", func(c *postgres.SinkConfig) { c.TLS.Cert = "/c.pem" }},
		{"Table", func(c *postgres.SinkConfig) { c.Table = "" }},
		{"Table", func(c *postgres.SinkConfig) { c.Table = "a.b.c" }},
		{"ProgressTable", func(c *postgres.SinkConfig) { c.ProgressTable = "x." }},
		{"Columns", func(c *postgres.SinkConfig) { c.Columns = nil }},
		{"Columns[1]", func(c *postgres.SinkConfig) { c.Columns = []string{"i", "i"} }},
		{"KeyColumns[0]", func(c *postgres.SinkConfig) { c.KeyColumns = []string{"nope"} }},
		{"KeyColumns[1]", func(c *postgres.SinkConfig) { c.KeyColumns = []string{"i", "i"} }},
		{"BatchRows", func(c *postgres.SinkConfig) { c.BatchRows = -1 }},
		{"MaxBufferedRows", func(c *postgres.SinkConfig) { c.BatchRows, c.MaxBufferedRows = 10, 5 }},
		{"WriteTimeout", func(c *postgres.SinkConfig) { c.WriteTimeout = -time.Second }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			_, err := postgres.NewSink(c)
			var ce *postgres.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, postgres.ErrConfig) {
				t.Fatalf("got %v, want a *ConfigError", err)
			}
			if !strings.HasPrefix(ce.Field, strings.SplitN(tc.field, " ", 2)[0]) {
				t.Fatalf("error names %q (%v), want %q", ce.Field, err, tc.field)
			}
			if strings.Contains(err.Error(), ":p@") {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
	if _, err := postgres.NewSink(ok); err != nil {
		t.Fatalf("good config refused: %v", err)
	}
}

// TestInitRefusesWhatTheServerRefuses: each wrong setting gives an error
// at start naming it.
func TestInitRefusesWhatTheServerRefuses(t *testing.T) {
	pg := pgtest.Start(t)
	tables(pg)
	pg.Exec("CREATE TABLE nokey (k text, n bigint)")
	wrongPassword := strings.Replace(pg.DSN(), pgtest.Password, "wrong", 1)
	noDB := strings.Replace(pg.DSN(), "/"+pgtest.Database+"?", "/nosuchdb?", 1)
	for _, tc := range []struct {
		name, want string
		transient  bool
		edit       func(*postgres.SinkConfig)
	}{
		{"password", "check URL (user, password)", false, func(c *postgres.SinkConfig) { c.URL = wrongPassword }},
		{"database", "check URL (the database name)", false, func(c *postgres.SinkConfig) { c.URL = noDB }},
		{"table", "check Table", false, func(c *postgres.SinkConfig) { c.Table = "nosuchtable" }},
		{"column", "check Columns", false, func(c *postgres.SinkConfig) { c.Columns = []string{"i", "nosuchcolumn"} }},
		{"key", "check KeyColumns", false, func(c *postgres.SinkConfig) {
			c.Table, c.Columns, c.KeyColumns = "nokey", []string{"k", "n"}, []string{"k"}
		}},
		{"unreachable", "server unavailable", true, func(c *postgres.SinkConfig) {
			c.URL = fmt.Sprintf("postgres://u:p@127.0.0.1:%d/db?sslmode=disable&connect_timeout=2", sluicetest.FreePort(t))
		}},
		{"tls", "server unavailable", true, func(c *postgres.SinkConfig) { c.URL, c.TLS.Mode = pg.DSN(), "require" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := baseConfig(pg.DSN())
			tc.edit(&c)
			_, err := sdktest.New(mustSink(t, c))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
			if got := errors.Is(err, sdk.ErrTransient); got != tc.transient {
				t.Fatalf("transient %v, want %v: %v", got, tc.transient, err)
			}
			if !tc.transient && !errors.Is(err, postgres.ErrRefused) {
				t.Fatalf("%v does not wrap ErrRefused", err)
			}
		})
	}
}

// TestInsertAndUpsertWithoutAGuarantee: rows are written per batch and
// the rest by Close; upserts keep the last row of a key; a record that
// does not map is dead-lettered.
func TestInsertAndUpsertWithoutAGuarantee(t *testing.T) {
	pg := pgtest.Start(t)
	tables(pg)
	m := new(postgres.Metrics)
	ins := baseConfig(pg.DSN())
	ins.BatchRows, ins.Metrics = 100, m
	h, err := sdktest.New(mustSink(t, ins), sdktest.WithGuarantee(sdk.NoGuarantee))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 250 {
		v := fmt.Sprintf(`{"i": %d, "k": "k%d", "doc": {"n": [%d]}}`, i, i%7, i)
		if err := h.Send("in", sdk.Record{Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Send("in", sdk.Record{Value: []byte(`{"i": "x"}`)}, sdk.Record{Value: []byte(`[1]`)}); err != nil {
		t.Fatal(err)
	}
	if n := query(t, pg, "SELECT count(*) FROM events"); n != 200 {
		t.Fatalf("%d rows before Close, want the 2 full batches of 100", n)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if n := query(t, pg, "SELECT count(DISTINCT i) FROM events WHERE doc->'n'->>0 = i::text"); n != 250 {
		t.Fatalf("%d distinct rows with their JSON, want 250", n)
	}
	if dl := h.Output(sdk.DeadLetterStream("store")); len(dl) != 2 {
		t.Fatalf("%d dead letters, want the 2 records that do not map", len(dl))
	}
	if m.Rows() != 250 || m.Bytes() == 0 || m.Errors() != 0 || m.Down() != nil {
		t.Fatalf("metrics: %d rows, %d bytes, %d errors, down %v; want 250 rows, no error", m.Rows(), m.Bytes(), m.Errors(), m.Down())
	}

	up := baseConfig(pg.DSN())
	up.Table, up.Columns, up.KeyColumns, up.BatchRows = "counts", []string{"k", "n"}, []string{"k"}, 64
	up.Map = func(r sdk.Record) ([]any, error) {
		n, err := strconv.ParseInt(string(r.Value), 10, 64)
		return []any{string(r.Key), n}, err
	}
	h, err = sdktest.New(mustSink(t, up), sdktest.WithGuarantee(sdk.AtLeastOnce))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 { // key k<i%10> ends at its last i
		if err := h.Send("in", sdk.Record{Key: []byte("k" + strconv.Itoa(i%10)), Value: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if n := query(t, pg, "SELECT count(*) FROM counts WHERE n = 990 + substr(k, 2)::int"); n != 10 {
		t.Fatalf("%d keys hold their last value, want 10", n)
	}
}
