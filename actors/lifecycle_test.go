package actors_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

func TestStatePersistsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	gen := func(count int) core.Factory {
		return func() core.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "words", Count: count, Key: sluicetest.Key(1000)}
		}
	}
	count := func() core.Operator { return &counter{name: "count", input: "words", parallelism: 3} }

	n := startNode(t, dir, gen(10_000), count)
	sluicetest.WaitFor(t, time.Minute, "first 10k counted", func() bool { return processed(n, "count") == 10_000 })
	stop(t, n)
	if c, _ := readCounts(t, dir, "count"); c["k7"] != 10 {
		t.Fatalf("after first run k7 = %d, want 10", c["k7"])
	}

	// The generator resumes from its stored position and the counter from
	// its stored counts.
	n = startNode(t, dir, gen(25_000), count)
	// Processed counts are stored with the state, so they continue too.
	sluicetest.WaitFor(t, time.Minute, "next 15k counted", func() bool { return processed(n, "count") == 25_000 })
	stop(t, n)
	counts, _ := readCounts(t, dir, "count")
	for i := 0; i < 1000; i++ {
		if c := counts["k"+strconv.Itoa(i)]; c != 25 {
			t.Fatalf("k%d = %d after restart, want 25", i, c)
		}
	}
}

// alarm sets a timer for every record "key:delay-ms" and reports fired
// timers; a record "panic" makes it panic.
type alarm struct {
	fired *sluicetest.Collector
}

func (a *alarm) Metadata() core.Metadata {
	return core.Metadata{Name: "alarm", Inputs: []core.Input{{Stream: "in", Routing: core.GroupBy}}, Parallelism: 2}
}
func (a *alarm) Init(core.Context) error { return nil }
func (a *alarm) ProcessRecord(ctx core.Context, rec core.Record) error {
	if string(rec.Value) == "panic" {
		panic("requested")
	}
	key, delay, _ := strings.Cut(string(rec.Value), ":")
	ms, err := strconv.Atoi(delay)
	if err != nil {
		return err
	}
	return ctx.SetTimer(key, time.Now().Add(time.Duration(ms)*time.Millisecond))
}
func (a *alarm) ProcessTimer(ctx core.Context, key string, at time.Time) error {
	a.fired.Add(ctx.Instance().Index, core.Record{Key: []byte(key), EventTime: at})
	return nil
}

func TestTimersFireAndPersistAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	fired := &sluicetest.Collector{}
	op := func() core.Operator { return &alarm{fired: fired} }
	send := func(n *actors.Node, key, value string) {
		t.Helper()
		sluicetest.Must(t, n.Produce(context.Background(), "in", core.Record{Key: []byte(key), Value: []byte(value)}))
	}

	n := startNode(t, dir, op)
	send(n, "a", "soon:10")
	sluicetest.WaitFor(t, 5*time.Second, "timer soon fired", func() bool { return fired.Len() == 1 })

	// A timer survives a panic-restart of its instance.
	send(n, "b", "afterpanic:50")
	send(n, "b", "panic")
	sluicetest.WaitFor(t, 5*time.Second, "timer afterpanic fired", func() bool { return fired.Len() == 2 })

	// A timer set before a stop fires after the restart, once its time has
	// passed; a replaced timer fires once, at its new time.
	send(n, "c", "later:300")
	send(n, "d", "far:3600000")
	send(n, "d", "far:400")
	due := time.Now().Add(400 * time.Millisecond)
	stop(t, n)
	if fired.Len() != 2 {
		t.Fatalf("%d timers fired before the stop, want 2", fired.Len())
	}
	sluicetest.WaitFor(t, 5*time.Second, "timers' due time to pass while stopped", func() bool { return time.Now().After(due) })
	n = startNode(t, dir, op)
	sluicetest.WaitFor(t, 5*time.Second, "stored timers fired after restart", func() bool { return fired.Len() == 4 })
	got := map[string]int{}
	for _, d := range fired.All() {
		got[string(d.Record.Key)]++
	}
	for _, k := range []string{"soon", "afterpanic", "later", "far"} {
		if got[k] != 1 {
			t.Errorf("timer %s fired %d times, want 1 (all: %v)", k, got[k], got)
		}
	}
	stop(t, n)
}

// slow sleeps for every record: a consumer slower than its producer.
type slow struct{ seen *atomic.Int64 }

func (s *slow) Metadata() core.Metadata {
	return core.Metadata{Name: "slow", Inputs: []core.Input{{Stream: "s"}}}
}
func (s *slow) Init(core.Context) error { return nil }
func (s *slow) ProcessRecord(core.Context, core.Record) error {
	for start := time.Now(); time.Since(start) < 20*time.Microsecond; {
		// simulated work: far slower than the source
	}
	s.seen.Add(1)
	return nil
}
func (s *slow) ProcessTimer(core.Context, string, time.Time) error { return nil }

func TestBackpressureBoundsQueuedRecords(t *testing.T) {
	const credits, batch, buffer = 4, 64, 8
	seen := &atomic.Int64{}
	n, err := actors.Start(context.Background(), actors.Config{
		LocalStore: tpebble.Local,
		NodeID:     "bp", DataDir: t.TempDir(), NoSync: true, Credits: credits, BatchSize: batch, BufferBatches: buffer, Logger: sluicetest.Logger(t),
	},
		func() core.Operator {
			return &sluicetest.Gen{Name: "fast", Stream: "s", Count: 1 << 40, Key: sluicetest.Key(10), Batch: 1000}
		},
		func() core.Operator { return &slow{seen: seen} },
	)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.Stop(ctx)
	}()
	var maxQueued, maxBuffered atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if q := n.Queued(); q > maxQueued.Load() {
				maxQueued.Store(q)
			}
			if b := n.Buffered(); b > maxBuffered.Load() {
				maxBuffered.Store(b)
			}
			select {
			case <-done:
				return
			default:
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	sluicetest.WaitFor(t, time.Minute, "slow consumer to process 10k records", func() bool { return seen.Load() >= 10_000 })
	close(done)
	wg.Wait()
	// One edge: at most credits batches in flight, and at the producer at
	// most bufferBatches batches plus one Poll's worth (the source notices
	// it is blocked after a Poll).
	t.Logf("max queued %d records, max buffered %d, while the consumer processed %d", maxQueued.Load(), maxBuffered.Load(), seen.Load())
	if bound := int64(credits * batch); maxQueued.Load() > bound {
		t.Fatalf("max queued %d records, want ≤ %d", maxQueued.Load(), bound)
	}
	if bound := int64(buffer*batch + 1000); maxBuffered.Load() > bound {
		t.Fatalf("max buffered %d records, want ≤ %d", maxBuffered.Load(), bound)
	}
	if maxQueued.Load() < batch {
		t.Fatalf("max queued %d: the test did not load the consumer", maxQueued.Load())
	}
}

// meta is an operator with given metadata and no behaviour.
type meta struct{ m core.Metadata }

func (o meta) Metadata() core.Metadata                          { return o.m }
func (meta) Init(core.Context) error                            { return nil }
func (meta) ProcessRecord(core.Context, core.Record) error      { return nil }
func (meta) ProcessTimer(core.Context, string, time.Time) error { return nil }
func of(ms ...core.Metadata) []core.Factory {
	out := make([]core.Factory, len(ms))
	for i, m := range ms {
		out[i] = func() core.Operator { return meta{m} }
	}
	return out
}

func TestInvalidMetadataFailsAtStart(t *testing.T) {
	ok := core.Metadata{Name: "ok", Inputs: []core.Input{{Stream: "s"}}}
	for _, tc := range []struct {
		name      string
		ops       []core.Factory
		operator  string
		field     string
		problemIn string
	}{
		{"empty name", of(core.Metadata{}), "", "name", "must not be empty"},
		{"bad name", of(core.Metadata{Name: "a b"}), "a b", "name", "use letters"},
		{"duplicate names", of(ok, ok), "ok", "name", "duplicate"},
		{"parallelism below 1", of(core.Metadata{Name: "p", Parallelism: -1}), "p", "parallelism", "must be ≥ 1, got -1"},
		{"parallelism above key groups", of(core.Metadata{Name: "p", Parallelism: 9, KeyGroups: 8}), "p", "parallelism", "≤ keyGroups (8)"},
		{"key groups too many", of(core.Metadata{Name: "k", KeyGroups: 1 << 20}), "k", "keyGroups", "between 1 and 32768"},
		{"unknown routing", of(core.Metadata{Name: "r", Inputs: []core.Input{{Stream: "s", Routing: 9}}}), "r", "inputs[0].routing", "unknown routing 9"},
		{"empty stream", of(core.Metadata{Name: "s", Inputs: []core.Input{{}}}), "s", "inputs[0].stream", "must not be empty"},
		{"input twice", of(core.Metadata{Name: "s", Inputs: []core.Input{{Stream: "x"}, {Stream: "x"}}}), "s", "inputs[1].stream", "listed twice"},
		{"bad output", of(core.Metadata{Name: "o", Outputs: []string{"ok", "no/slash"}}), "o", "outputs[1]", "use letters"},
		{"dead letter after", of(core.Metadata{Name: "d", Restart: core.RestartPolicy{DeadLetterAfter: -2}}), "d", "restart.deadLetterAfter", "≥ 1"},
		{"max backoff", of(core.Metadata{Name: "b", Restart: core.RestartPolicy{InitialBackoff: time.Second, MaxBackoff: time.Millisecond}}), "b", "restart.maxBackoff", "≥ initialBackoff"},
		{"nil factory", []core.Factory{nil}, "#0", "factory", "nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, DataDir: t.TempDir()}, tc.ops...)
			var me *core.MetadataError
			if !errors.As(err, &me) {
				t.Fatalf("Start error = %v, want a *MetadataError", err)
			}
			if me.Operator != tc.operator || me.Field != tc.field || !strings.Contains(me.Problem, tc.problemIn) {
				t.Fatalf("got %q (operator %q, field %q), want operator %q, field %q, problem containing %q",
					err, me.Operator, me.Field, tc.operator, tc.field, tc.problemIn)
			}
		})
	}
}

// producer produces to a stream it did not declare.
type undeclared struct{ errs chan error }

func (undeclared) Metadata() core.Metadata {
	return core.Metadata{Name: "u", Inputs: []core.Input{{Stream: "in"}}, Outputs: []string{"declared"}}
}
func (undeclared) Init(core.Context) error { return nil }
func (u undeclared) ProcessRecord(ctx core.Context, rec core.Record) error {
	u.errs <- ctx.Produce("undeclared", rec)
	return nil
}
func (undeclared) ProcessTimer(core.Context, string, time.Time) error { return nil }

func TestUnknownStreams(t *testing.T) {
	var logs sluicetest.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	errs := make(chan error, 1)
	n, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, DataDir: t.TempDir(), Logger: logger},
		func() core.Operator { return undeclared{errs} })
	sluicetest.Must(t, err)
	defer stop(t, n)

	if err := n.Produce(context.Background(), "nobody-reads-this", core.Record{}); !errors.Is(err, sdk.ErrUnknownStream) {
		t.Fatalf("Produce to unread stream: %v, want ErrUnknownStream", err)
	}
	sluicetest.Must(t, n.Produce(context.Background(), "in", core.Record{}))
	if err := <-errs; !errors.Is(err, sdk.ErrUnknownStream) || !strings.Contains(err.Error(), `"undeclared"`) {
		t.Fatalf("operator Produce to undeclared stream: %v, want ErrUnknownStream naming it", err)
	}
	// The operator drops the error; the status still says it.
	var last string
	for _, st := range n.Status() {
		for _, in := range st.Instances {
			if st.Name == "u" {
				last = in.LastError
			}
		}
	}
	if !strings.Contains(last, `produce to "undeclared"`) {
		t.Fatalf("the status's last error = %q, want the refused produce (the operator dropped the error)", last)
	}
	if c := strings.Count(logs.String(), "input stream has no producer"); c != 1 || !strings.Contains(logs.String(), "stream=in") {
		t.Fatalf("dangling input logged %d times, want once naming stream in; logs:\n%s", c, logs.String())
	}
}
