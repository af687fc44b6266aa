package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// base is the event time of the first input record.
var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// keyGroups is the counter's key-group count, parallelism its instances.
const keyGroups, parallelism = 8, 2

// input is the suite's records: words with increasing event times, and
// one "boom" record the counter fails on at its first attempt.
func input() []sdk.Record {
	words := []string{"a", "b", "a", "c", "boom", "b", "a", "d", "e", "a", "c", "f", "g", "b", "h"}
	out := make([]sdk.Record, len(words))
	for i, w := range words {
		out[i] = sdk.Record{Key: []byte(w), Value: []byte(w), EventTime: base.Add(time.Duration(i) * time.Second)}
	}
	return out
}

// source produces recs in one Poll, then ends its stream.
type source struct {
	recs []sdk.Record
	done bool
}

func (*source) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "src", Outputs: []string{"words"}, Watermarks: &sdk.WatermarkStrategy{}}
}
func (*source) Init(sdk.Context) error { return nil }
func (s *source) Poll(ctx sdk.Context) error {
	if s.done {
		return sdk.ErrEndOfStream
	}
	for _, r := range s.recs {
		if err := ctx.Produce("words", r); err != nil {
			return err
		}
	}
	s.done = true
	return nil
}
func (*source) ProcessRecord(sdk.Context, sdk.Record) error       { return nil }
func (*source) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
func (*source) ResumesFromState()                                 {}

// counter counts records per key in state and emits "key=n"; every
// record sets a timer of its own one millisecond after its event time,
// and replaces its key's "final" timer an hour after it, which fires at
// the end of input with the key's final count. The record "boom" fails
// its first attempt (of the run: failed is shared by the run's
// operators) after writing state, producing and setting a timer, all of
// which the rollback must undo.
type counter struct{ failed *atomic.Bool }

// errBoom is the counter's one failure.
var errBoom = errors.New("boom")

func (counter) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "count", Inputs: []sdk.Input{{Stream: "words", Routing: sdk.GroupBy}},
		Outputs: []string{"counts", "fired"}, Parallelism: parallelism, KeyGroups: keyGroups}
}
func (counter) Init(sdk.Context) error { return nil }
func (c counter) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	n, err := sdk.GetInt64(ctx.State(), rec.Key)
	if err != nil {
		return err
	}
	n++
	sdk.PutInt64(ctx.State(), rec.Key, n)
	if err := ctx.Produce("counts", sdk.Record{Key: rec.Key, Value: fmt.Appendf(nil, "%s=%d", rec.Key, n)}); err != nil {
		return err
	}
	if err := ctx.SetEventTimer(fmt.Sprintf("r/%s/%d", rec.Key, n), rec.EventTime.Add(time.Millisecond)); err != nil {
		return err
	}
	if err := ctx.SetEventTimer("final/"+string(rec.Key), rec.EventTime.Add(time.Hour)); err != nil {
		return err
	}
	if string(rec.Value) == "boom" && !c.failed.Swap(true) {
		return errBoom
	}
	return nil
}
func (counter) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
func (counter) ProcessEventTimer(ctx sdk.Context, key string, at time.Time) error {
	v := at.Sub(base).String()
	if word, ok := cutPrefix(key, "final/"); ok {
		n, err := sdk.GetInt64(ctx.State(), []byte(word))
		if err != nil {
			return err
		}
		v = fmt.Sprintf("%s count %d", v, n)
	}
	return ctx.Produce("fired", sdk.Record{Key: []byte(key), Value: []byte(v)})
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return "", false
}

// result is what a run produced and left.
type result struct {
	counts []string // "key=n" per record, sorted
	fired  []string // "timer key @ at[ count n]", sorted
	state  []string // "group/key=n", in group then key order
}

// sorted returns the records as "key @ value" strings, sorted.
func sorted(recs []sdk.Record, format func(sdk.Record) string) []string {
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, format(r))
	}
	slices.Sort(out)
	return out
}

func countOf(r sdk.Record) string { return string(r.Value) }
func firedOf(r sdk.Record) string { return string(r.Key) + " @ " + string(r.Value) }

// runSDKTest runs source and counter through an sdktest Graph.
func runSDKTest(t *testing.T) result {
	t.Helper()
	failed := &atomic.Bool{}
	g, err := sdktest.NewGraph([]sdk.Factory{
		func() sdk.Operator { return &source{recs: input()} },
		func() sdk.Operator { return counter{failed} },
	})
	if err != nil {
		t.Fatal(err)
	}
	err = g.RunSources(10)
	if !errors.Is(err, errBoom) {
		t.Fatalf("sdktest: RunSources: got %v, want the counter's first failure", err)
	}
	// The runtime retries a failed record on the restarted operator; a
	// Graph returns the failure, so the suite retries, as the runtime does,
	// by sending the record again, then the records after it.
	rest := input()[slices.IndexFunc(input(), func(r sdk.Record) bool { return string(r.Value) == "boom" }):]
	if err := g.Send("words", rest...); err != nil {
		t.Fatalf("sdktest: resend: %v", err)
	}
	if err := g.End(); err != nil {
		t.Fatalf("sdktest: End: %v", err)
	}
	var res result
	res.counts = sorted(g.Output("counts"), countOf)
	res.fired = sorted(g.Output("fired"), firedOf)
	restarts := 0
	for i := range parallelism {
		h := g.Instance("count", i)
		restarts += h.Restarts()
		if p := h.EventTimers(); len(p) != 0 {
			t.Errorf("sdktest: instance %d has event timers pending after End: %v", i, p)
		}
		for _, e := range h.State() {
			n, err := sdk.BytesInt64(e.Value)
			if err != nil {
				t.Fatal(err)
			}
			res.state = append(res.state, fmt.Sprintf("%d/%s=%d", e.Group, e.Key, n))
		}
	}
	if restarts != 1 {
		t.Errorf("sdktest: the counter restarted %d times, want 1 (after boom)", restarts)
	}
	return res
}

// collector records what reaches the runtime's sink.
type collector struct {
	mu    sync.Mutex
	recs  map[string][]sdk.Record
	count atomic.Int64
}

type sink struct{ c *collector }

func (sink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "sink", Inputs: []sdk.Input{{Stream: "counts"}, {Stream: "fired"}}}
}
func (sink) Init(sdk.Context) error { return nil }
func (s sink) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	s.c.recs[rec.Stream] = append(s.c.recs[rec.Stream], sdk.Record{Key: slices.Clone(rec.Key), Value: slices.Clone(rec.Value)})
	return nil
}
func (sink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// runRuntime runs source, counter and a collecting sink in the embedded
// runtime until its bounded streams finish.
func runRuntime(t *testing.T) result {
	t.Helper()
	dir := t.TempDir()
	failed := &atomic.Bool{}
	c := &collector{recs: map[string][]sdk.Record{}}
	runNode(t, dir,
		func() sdk.Operator { return &source{recs: input()} },
		func() sdk.Operator { return counter{failed} },
		func() sdk.Operator { return sink{c} },
	)
	if !failed.Load() {
		t.Fatal("runtime: the counter never failed, so nothing was rolled back")
	}
	var res result
	c.mu.Lock()
	res.counts = sorted(c.recs["counts"], countOf)
	res.fired = sorted(c.recs["fired"], firedOf)
	c.mu.Unlock()
	res.state = storedCounts(t, dir, "count")
	return res
}

// TestSDKTestMatchesTheRuntime runs the same operators through sdktest and
// the runtime and compares outputs, state and fired timers.
func TestSDKTestMatchesTheRuntime(t *testing.T) {
	want := runSDKTest(t)
	got := runRuntime(t)
	if len(want.counts) != len(input()) {
		t.Fatalf("sdktest: %d counts, want one per input record (%d): %v", len(want.counts), len(input()), want.counts)
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"outputs (counts)", got.counts, want.counts},
		{"timers fired", got.fired, want.fired},
		{"state", got.state, want.state},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s differ:\nruntime: %q\nsdktest: %q", c.what, c.got, c.want)
		}
	}
}

// runNode runs ops in the embedded runtime on dir until its bounded
// streams finish (node.Run returns), failing t if that takes a minute.
func runNode(t *testing.T, dir string, ops ...sdk.Factory) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := node.Config{NodeConfig: node.NodeConfig{DataDir: dir, NoSync: true, Logger: sluicetest.Logger(t)}, Guarantee: sdk.AtLeastOnce}
	if err := node.Run(ctx, cfg, ops...); err != nil {
		t.Fatalf("runtime: Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("runtime: Run returned only when its deadline passed, not when its streams finished")
	}
}

// storedCounts returns operator op's int64 state entries in the stopped
// runtime's database in dir, as "group/key=n" in group then key order.
func storedCounts(t *testing.T, dir, op string) []string {
	t.Helper()
	db, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	err = db.NewStore(op).Scan(0, keyGroups, nil, func(kg int, key, value []byte) error {
		n, err := sdk.BytesInt64(value)
		out = append(out, fmt.Sprintf("%d/%s=%d", kg, key, n))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
