package actors_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// fakeObserver records spans; traceparents are "tp-<n>".
type fakeObserver struct {
	sampleEvery int64
	produced    atomic.Int64
	mu          sync.Mutex
	spans       []status.SpanInfo
	ids         []string
	errs        []error
	processed   atomic.Int64
	restarts    atomic.Int64
}

// Sample samples the first of every sampleEvery records, counting
// reservations in produced.
func (f *fakeObserver) Sample(_ string, n int) (first, every int) {
	base := f.produced.Add(int64(n)) - int64(n)
	return int((f.sampleEvery - base%f.sampleEvery) % f.sampleEvery), int(f.sampleEvery)
}
func (f *fakeObserver) StartSpan(info status.SpanInfo) (string, func(error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := fmt.Sprintf("tp-%d", len(f.spans))
	f.spans = append(f.spans, info)
	f.ids = append(f.ids, id)
	f.errs = append(f.errs, nil)
	n := len(f.errs) - 1
	return id, func(err error) {
		f.mu.Lock()
		f.errs[n] = err
		f.mu.Unlock()
	}
}
func (f *fakeObserver) Processed(string, int, time.Duration, time.Duration) { f.processed.Add(1) }
func (f *fakeObserver) Restarted(string, int)                               { f.restarts.Add(1) }
func (f *fakeObserver) DeadLettered(string, int)                            {}

// relay passes records on from in to out, failing once on value "7".
type relay struct {
	name, in, out string
	failed        *atomic.Bool
}

func (r relay) Metadata() core.Metadata {
	m := core.Metadata{Name: r.name, Inputs: []core.Input{{Stream: r.in, Routing: core.GroupBy}}, Parallelism: 2}
	if r.out != "" {
		m.Outputs = []string{r.out}
	}
	return m
}
func (relay) Init(core.Context) error { return nil }
func (r relay) ProcessRecord(ctx core.Context, rec core.Record) error {
	if string(rec.Value) == "7" && r.failed != nil && r.failed.CompareAndSwap(false, true) {
		return errors.New("fails once")
	}
	if r.out == "" {
		return nil
	}
	return ctx.Produce(r.out, core.Record{Key: rec.Key, Value: rec.Value})
}
func (relay) ProcessTimer(core.Context, string, time.Time) error { return nil }

func TestTracesFollowRecordsThroughOperators(t *testing.T) {
	obs := &fakeObserver{sampleEvery: 10}
	got := &sluicetest.Collector{}
	failed := &atomic.Bool{} // shared by the relay's incarnations
	n, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t), Observer: obs},
		func() core.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "a", Count: 100, Key: sluicetest.Key(5)}
		},
		func() core.Operator { return relay{name: "first", in: "a", out: "b", failed: failed} },
		func() core.Operator {
			return &sluicetest.Sink{Name: "sink", Inputs: []core.Input{{Stream: "b"}}, Into: got}
		},
	)
	sluicetest.Must(t, err)
	defer stop(t, n)
	sluicetest.WaitFor(t, 10*time.Second, "100 records at the sink", func() bool { return got.Len() == 100 })

	traced := 0
	for _, d := range got.All() {
		if tp, ok := d.Record.Header(status.TraceHeader); ok {
			traced++
			if !strings.HasPrefix(tp, "tp-") {
				t.Fatalf("record carries trace header %q", tp)
			}
		}
	}
	if traced != 10 {
		t.Fatalf("%d records reached the sink traced, want 10 (1 in 10 sampled)", traced)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	// Every sampled record: a root span at gen, a span at first whose
	// parent is the root, a span at sink whose parent is first's.
	parentOf := map[string]string{}
	byOp := map[string]int{}
	for i, s := range obs.spans {
		parentOf[obs.ids[i]] = s.Parent
		byOp[s.Operator]++
		if s.Operator != "gen" && s.Parent == "" {
			t.Fatalf("span of %s has no parent", s.Operator)
		}
		if s.Operator == "first" && s.Stream != "a" {
			t.Fatalf("span of first has input stream %q", s.Stream)
		}
	}
	if byOp["gen"] != 10 || byOp["sink"] != 10 || byOp["first"] < 10 {
		t.Fatalf("spans per operator %v, want 10 each (first may retry)", byOp)
	}
	for i, s := range obs.spans {
		if s.Operator != "sink" {
			continue
		}
		first := s.Parent
		root := parentOf[first]
		if root == "" || parentOf[root] != "" {
			t.Fatalf("sink span %s: parent chain %s → %s is not first → gen", obs.ids[i], first, root)
		}
	}
	if obs.processed.Load() == 0 {
		t.Fatal("no processed observations")
	}
	if obs.restarts.Load() != 1 {
		t.Fatalf("%d restarts observed, want 1", obs.restarts.Load())
	}
}

func TestSlowStreamsAreTimed(t *testing.T) {
	// A record alone in its batch (a slow stream) is timed: one in
	// ProcessedSampleEvery alone would time none of these few.
	obs := &fakeObserver{sampleEvery: 1 << 30}
	got := &sluicetest.Collector{}
	n, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t), Observer: obs},
		func() core.Operator {
			return &sluicetest.Sink{Name: "sink", Inputs: []core.Input{{Stream: "in"}}, Into: got}
		},
	)
	sluicetest.Must(t, err)
	defer stop(t, n)
	const slow = 10
	for i := range slow {
		sluicetest.Must(t, n.Produce(context.Background(), "in", core.Record{Value: []byte(fmt.Sprint(i))}))
		sluicetest.WaitFor(t, 10*time.Second, fmt.Sprintf("record %d at the sink", i), func() bool { return got.Len() == i+1 })
	}
	if p := obs.processed.Load(); p != slow {
		t.Fatalf("%d of %d records sent one at a time were timed, want all", p, slow)
	}
}
