// Package sluicetest holds helpers for Sluice's own tests: waiting on
// conditions and small operators (generators, collectors) used across test
// suites. It is not for production code.
package sluicetest

import (
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
)

// WaitFor polls cond every few milliseconds until it returns true, failing
// the test with msg if timeout passes first.
func WaitFor(t testing.TB, timeout time.Duration, msg string, cond func() bool) {
	t.Helper()
	WaitEvery(t, timeout, 2*time.Millisecond, msg, cond)
}

// WaitEvery is WaitFor polling every interval: for conditions that cost a
// request (a node's HTTP API, a broker), not a memory read.
func WaitEvery(t testing.TB, timeout, interval time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, msg)
		}
		time.Sleep(interval)
	}
}

// Gen is a source operator producing Count records to Stream, Batch per
// Poll, with keys Key(i) and values "i" (decimal).
type Gen struct {
	Name        string
	Stream      string
	Count       int
	Batch       int
	Key         func(i int) string
	Parallelism int // default 1; instance j produces records i ≡ j mod Parallelism
	// Gate, when set, is asked before each record with its index: false
	// holds production back there (Poll produces nothing more) until it
	// says true. Tests use it to stop a stream mid-way on a condition.
	Gate func(i int) bool
	// ValueSize, when longer than the decimal index, pads each record's
	// value to that many bytes: the index, then spaces.
	ValueSize int

	next int // next i to produce, per incarnation
}

// Metadata implements core.Operator.
func (g *Gen) Metadata() core.Metadata {
	return core.Metadata{Name: g.Name, Outputs: []string{g.Stream}, Parallelism: g.Parallelism}
}

// Init resumes from the persisted position.
func (g *Gen) Init(ctx core.Context) error {
	v, err := ctx.State().Get([]byte("next"))
	if err == nil {
		g.next, err = strconv.Atoi(string(v))
		return err
	}
	g.next = ctx.Instance().Index
	return nil
}

// Poll produces the next batch.
func (g *Gen) Poll(ctx core.Context) error {
	step := max(g.Parallelism, 1)
	batch := g.Batch
	if batch == 0 {
		batch = 256
	}
	for n := 0; n < batch && g.next < g.Count; n++ {
		if g.Gate != nil && !g.Gate(g.next) {
			break
		}
		v := strconv.AppendInt(make([]byte, 0, g.ValueSize), int64(g.next), 10)
		for len(v) < g.ValueSize {
			v = append(v, ' ')
		}
		if err := ctx.Produce(g.Stream, core.Record{Key: []byte(g.Key(g.next)), Value: v}); err != nil {
			return err
		}
		g.next += step
	}
	ctx.State().Set([]byte("next"), []byte(strconv.Itoa(g.next)))
	return nil
}

// ProcessRecord implements core.Operator; a source gets no records.
func (g *Gen) ProcessRecord(core.Context, core.Record) error { return nil }

// ResumesFromState implements core.Resumable: Poll stores its position in
// the same attempt as the records it produced.
func (g *Gen) ResumesFromState() {}

// ProcessTimer implements core.Operator.
func (g *Gen) ProcessTimer(core.Context, string, time.Time) error { return nil }

// Collector gathers records delivered to sink operators, safely across
// instances.
type Collector struct {
	mu      sync.Mutex
	records []Delivered
}

// Delivered is one record as seen by a Sink instance.
type Delivered struct {
	Instance int
	Record   core.Record
}

// Add records a delivery.
func (c *Collector) Add(instance int, rec core.Record) {
	c.mu.Lock()
	c.records = append(c.records, Delivered{instance, rec})
	c.mu.Unlock()
}

// Len returns the number of deliveries so far.
func (c *Collector) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.records)
}

// All returns a copy of the deliveries so far.
func (c *Collector) All() []Delivered {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Delivered(nil), c.records...)
}

// Sink is an operator that hands every record it receives to a Collector.
type Sink struct {
	Name        string
	Inputs      []core.Input
	Parallelism int
	Into        *Collector
}

// Metadata implements core.Operator.
func (s *Sink) Metadata() core.Metadata {
	return core.Metadata{Name: s.Name, Inputs: s.Inputs, Parallelism: s.Parallelism}
}

// Init implements core.Operator.
func (s *Sink) Init(core.Context) error { return nil }

// ProcessRecord collects rec.
func (s *Sink) ProcessRecord(ctx core.Context, rec core.Record) error {
	s.Into.Add(ctx.Instance().Index, rec)
	return nil
}

// ProcessTimer implements core.Operator.
func (s *Sink) ProcessTimer(core.Context, string, time.Time) error { return nil }

// Key returns "k<i mod n>", a key function for Gen.
func Key(n int) func(int) string {
	return func(i int) string { return "k" + strconv.Itoa(i%n) }
}

// Must fails the test on err.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Logger returns a logger that writes to the test's log at Warn and above,
// so that runtime warnings show up with the failing test only. Lines
// logged once the test's cleanups have run are dropped: a goroutine of a
// library can outlive a stopped node by moments (grpc finishing a
// connection attempt calls the node's transport credentials, which log),
// and testing panics on a log after the test completed.
func Logger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool // the test's cleanups ran
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}
