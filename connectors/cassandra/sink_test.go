package cassandra_test

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"gopkg.in/inf.v0"

	"github.com/sluicehq/sluice/connectors/cassandra"
	"github.com/sluicehq/sluice/internal/cqltest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func send(t *testing.T, h *sdktest.Harness, vals ...string) {
	t.Helper()
	for _, v := range vals {
		must(t, h.Send("in", sdk.Record{Value: []byte(v)}))
	}
}

// doc is the JSON of row (k, i) with value n.
func doc(k string, i, n int) string {
	return fmt.Sprintf(`{"k": %q, "i": %d, "n": %d}`, k, i, n)
}

// TestRowsArriveExactly: under exactly-once every row is in the table
// once its checkpoint's barrier has passed, with every column's value as
// the JSON gave it; a record that does not map is dead-lettered.
func TestRowsArriveExactly(t *testing.T) {
	s := start(t, cqltestConfig())
	m := new(cassandra.Metrics)
	c := baseConfig(s)
	c.Metrics, c.BatchRows = m, 7
	h, err := sdktest.New(mustSink(t, c))
	must(t, err)
	full := `{"k": "full", "i": 1, "n": 5, "score": 2.5, "ok": true, "at": "2026-12-07T10:00:00.123Z",
		"id": "b1a7c2d4-0000-4000-8000-000000000001", "tags": ["x", "y"], "attrs": {"a": 1, "b": 2},
		"doc": {"nested": [1]}, "price": 12.345}`
	send(t, h, full)
	for i := range 300 {
		send(t, h, doc("k"+strconv.Itoa(i%10), i, i))
	}
	bad := []string{`[1]`, `{"k": "x", "i": "one"}`, `{"i": 1, "n": 1}`, `{"k": "", "i": 1}`, `{"k": "x", "i": 1, "n": 99999999999}`,
		`{"k": "x", "i": 1, "id": "not-a-uuid"}`}
	for _, b := range bad {
		if err := h.Send("in", sdk.Record{Value: []byte(b)}); !errors.Is(err, sdk.ErrBadRecord) {
			t.Fatalf("record %s: got %v, want it refused as bad (dead-lettered)", b, err)
		}
	}
	if n := s.Count("app", "events"); n != 0 {
		t.Fatalf("%d rows before the barrier, want none (buffered)", n)
	}
	must(t, h.Checkpoint(1))
	if n := s.Count("app", "events"); n != 301 {
		t.Fatalf("%d rows after the barrier, want 301", n)
	}
	if dl := h.Output(sdk.DeadLetterStream("store")); len(dl) != len(bad) {
		t.Fatalf("%d dead letters, want the %d records that do not map", len(dl), len(bad))
	}
	must(t, h.Complete(1))
	sess := session(t, s)
	var (
		n     int
		score float64
		ok    bool
		at    time.Time
		id    gocql.UUID
		tags  []string
		attrs map[string]int
		text  string
		price *inf.Dec
	)
	must(t, sess.Query(`SELECT n, score, ok, at, id, tags, attrs, doc, price FROM app.events WHERE k = 'full' AND i = 1`).
		Scan(&n, &score, &ok, &at, &id, &tags, &attrs, &text, &price))
	if n != 5 || score != 2.5 || !ok || at.UnixMilli() != 1796637600123 || id.String() != "b1a7c2d4-0000-4000-8000-000000000001" ||
		fmt.Sprint(tags) != "[x y]" || attrs["b"] != 2 || text != `{"nested": [1]}` || price.String() != "12.345" {
		t.Fatalf("row full: got n %d score %v ok %v at %v id %v tags %v attrs %v doc %q price %v", n, score, ok, at, id, tags, attrs, text, price)
	}
	var sum int64
	iter := sess.Query(`SELECT n FROM app.events WHERE k = 'k3'`).Iter()
	rows := 0
	for iter.Scan(&n) {
		sum += int64(n)
		rows++
	}
	must(t, iter.Close())
	if rows != 30 || sum != 30*3+10*(29*30/2) {
		t.Fatalf("partition k3: %d rows summing %d, want 30 rows of 3, 13, …, 293", rows, sum)
	}
	if s.Batches() == 0 {
		t.Fatal("no batch sent: rows of one partition go in unlogged batches")
	}
	if m.Rows() != 301 || m.Bytes() == 0 || m.Errors() != 0 || m.Down() != nil {
		t.Fatalf("metrics: %d rows, %d bytes, %d errors, down %v; want 301 rows, no error", m.Rows(), m.Bytes(), m.Errors(), m.Down())
	}
	must(t, h.Close())
}

// TestReplayAfterRollbackWritesNoDuplicates: rows written at a barrier
// whose checkpoint never completes are written again by the replay after
// the rollback: the table holds each row once, with the replay's values,
// although the replay writes them in another order (as when its inputs
// interleave differently).
func TestReplayAfterRollbackWritesNoDuplicates(t *testing.T) {
	s := start(t, cqltestConfig())
	h, err := sdktest.New(mustSink(t, baseConfig(s)))
	must(t, err)
	for i := range 100 {
		send(t, h, doc("a", i, i))
	}
	must(t, h.Checkpoint(1))
	must(t, h.Complete(1))
	// After checkpoint 1: rows 100..199, and row a/0 updated twice.
	for i := 100; i < 200; i++ {
		send(t, h, doc("a", i, i))
	}
	send(t, h, doc("a", 0, -1), doc("a", 0, -2))
	must(t, h.Checkpoint(2)) // written, never completed
	if n := s.Count("app", "events"); n != 200 {
		t.Fatalf("%d rows after checkpoint 2's barrier, want 200", n)
	}
	writes := s.Writes()
	must(t, h.Crash(1)) // the rollback: the records after checkpoint 1 come again
	send(t, h, doc("a", 0, -2), doc("a", 0, -1))
	for i := 199; i >= 100; i-- {
		send(t, h, doc("a", i, i))
	}
	must(t, h.Checkpoint(3))
	must(t, h.Complete(3))
	if n := s.Count("app", "events"); n != 200 {
		t.Fatalf("%d rows after the replay, want 200: no duplicate", n)
	}
	if s.Writes() < writes+100 {
		t.Fatalf("the replay wrote %d rows, want ≥ 100 (the rows again)", s.Writes()-writes)
	}
	var n int
	must(t, session(t, s).Query(`SELECT n FROM app.events WHERE k = 'a' AND i = 0`).Scan(&n))
	if n != -1 {
		t.Fatalf("row a/0 holds %d, want the replay's last value -1 (its barrier's timestamp is newer than the aborted attempt's)", n)
	}
	// A restore to checkpoint 3 (completed) commits again: nothing changes.
	writes = s.Writes()
	must(t, h.Restore(3))
	if s.Writes() != writes {
		t.Fatalf("a repeated commit wrote %d rows, want none", s.Writes()-writes)
	}
	must(t, h.Close())
}

// TestAtLeastOnceFlushesAndCloses: without exactly-once rows are written
// at each Flush and by Close, at once when MaxBufferedRows are buffered;
// a later record of a key merges into its buffered row (a missing field
// leaves the column as it was).
func TestAtLeastOnceFlushesAndCloses(t *testing.T) {
	s := start(t, cqltestConfig())
	c := baseConfig(s)
	c.MaxBufferedRows = 50
	h, err := sdktest.New(mustSink(t, c), sdktest.WithGuarantee(sdk.AtLeastOnce))
	must(t, err)
	send(t, h, `{"k": "m", "i": 0, "n": 1, "doc": "first"}`, `{"k": "m", "i": 0, "n": 2}`)
	must(t, h.Flush())
	send(t, h, `{"k": "m", "i": 0, "score": 1.5}`)
	must(t, h.Flush())
	var n int
	var text string
	var score float64
	must(t, session(t, s).Query(`SELECT n, doc, score FROM app.events WHERE k = 'm' AND i = 0`).Scan(&n, &text, &score))
	if n != 2 || text != "first" || score != 1.5 {
		t.Fatalf("row m/0: n %d doc %q score %v, want 2, first, 1.5 (merged, unset columns kept)", n, text, score)
	}
	for i := range 120 {
		send(t, h, doc("b", i, i))
	}
	if got := s.Count("app", "events"); got != 101 {
		t.Fatalf("%d rows before the flush, want 101 (two writes of 50 buffered rows)", got)
	}
	must(t, h.Close())
	if got := s.Count("app", "events"); got != 121 {
		t.Fatalf("%d rows after Close, want 121", got)
	}
}

// cqltestConfig is the default server of the tests.
func cqltestConfig() cqltest.Config { return cqltest.Config{} }

// TestFailedBarrierKeepsTheRows: a coordinator short of replicas
// (Unavailable) is an outage, a write timeout a passing failure; either
// fails the checkpoint and keeps the rows, and the next barrier writes
// them.
func TestFailedBarrierKeepsTheRows(t *testing.T) {
	s := start(t, cqltestConfig())
	m := new(cassandra.Metrics)
	c := baseConfig(s)
	c.Metrics = m
	h, err := sdktest.New(mustSink(t, c))
	must(t, err)
	for i := range 20 {
		send(t, h, doc("a", i, i))
	}
	must(t, s.SetMode(cqltest.Unavailable))
	err = h.Checkpoint(1)
	if !errors.Is(err, sdk.ErrTransient) || !errors.Is(err, cassandra.ErrUnavailable) || m.Down() == nil {
		t.Fatalf("Unavailable: got %v (down %v), want a transient ErrUnavailable and the outage in Metrics", err, m.Down())
	}
	must(t, s.SetMode(cqltest.TimingOut))
	err = h.Checkpoint(2)
	if !errors.Is(err, sdk.ErrTransient) || errors.Is(err, cassandra.ErrUnavailable) || m.Down() != nil {
		t.Fatalf("Write_timeout: got %v (down %v), want a transient error that is no outage", err, m.Down())
	}
	must(t, s.SetMode(cqltest.Normal))
	for i := 20; i < 30; i++ {
		send(t, h, doc("a", i, i))
	}
	must(t, h.Checkpoint(3))
	if n := s.Count("app", "events"); n != 30 {
		t.Fatalf("%d rows after the barrier that succeeded, want 30", n)
	}
	if m.Errors() != 2 || m.Rows() != 30 {
		t.Fatalf("metrics: %d errors, %d rows; want 2 and 30", m.Errors(), m.Rows())
	}
	must(t, h.Close())
}

// TestRescale: two instances checkpointed and restored into one: the
// survivor's write timestamps follow both predecessors' (instance 1 wrote
// with the host's clock, far after checkpoint ids 1 and 2 taken as µs), so
// a row it writes supersedes theirs.
func TestRescale(t *testing.T) {
	s := start(t, cqltestConfig())
	c := baseConfig(s)
	c.Parallelism, c.MaxBufferedRows = 2, 1 // every row written at once, at the host's clock
	f := mustSink(t, c)
	h0, err := sdktest.New(f)
	must(t, err)
	h1, err := sdktest.New(f, sdktest.WithInstance(1))
	must(t, err)
	send(t, h1, doc("b", 1, 1))
	must(t, h0.Checkpoint(1))
	must(t, h1.Checkpoint(1))
	s0, _ := h0.Snapshot(1)
	s1, _ := h1.Snapshot(1)
	must(t, h0.Close())
	must(t, h1.Close())
	c.Parallelism, c.MaxBufferedRows = 1, 0
	one, err := sdktest.New(mustSink(t, c), sdktest.WithSnapshot(s0, s1))
	must(t, err)
	send(t, one, doc("b", 1, 2))
	must(t, one.Checkpoint(2)) // timestamp max(2/1000, the last used + 1)
	var b int
	must(t, session(t, s).Query(`SELECT n FROM app.events WHERE k = 'b' AND i = 1`).Scan(&b))
	if b != 2 || s.Count("app", "events") != 1 {
		t.Fatalf("after the rescale b = %d, %d rows; want 2 (the survivor's write newest), 1 row", b, s.Count("app", "events"))
	}
	must(t, one.Close())
}
