package conformance_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// tally counts records per key in state at a given parallelism, emitting
// "key=n@instance/parallelism": what a rescale must carry over, key group
// by key group, and which instance owns the key's group.
type tally struct{ par int }

func (t tally) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "tally", Inputs: []sdk.Input{{Stream: "words", Routing: sdk.GroupBy}},
		Outputs: []string{"counts"}, Parallelism: t.par, KeyGroups: keyGroups}
}
func (tally) Init(sdk.Context) error { return nil }
func (tally) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	n, err := sdk.GetInt64(ctx.State(), rec.Key)
	if err != nil {
		return err
	}
	sdk.PutInt64(ctx.State(), rec.Key, n+1)
	in := ctx.Instance()
	return ctx.Produce("counts", sdk.Record{Key: rec.Key, Value: fmt.Appendf(nil, "%s=%d@%d/%d", rec.Key, n+1, in.Index, in.Parallelism)})
}
func (tally) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// words returns records of ws.
func words(ws ...string) []sdk.Record {
	out := make([]sdk.Record, len(ws))
	for i, w := range ws {
		out[i] = sdk.Record{Key: []byte(w), Value: []byte(w), EventTime: base.Add(time.Duration(i) * time.Second)}
	}
	return out
}

var (
	before = words("a", "b", "c", "d", "e", "f", "g", "h", "a", "c", "e")
	after  = words("a", "b", "c", "d", "e", "f", "g", "h", "b", "d", "i")
)

// TestRescaleMatchesTheRuntime counts at parallelism 2, rescales the
// counter to 3 (its key groups, with their state, move between instances)
// and counts on; sdktest (a checkpoint's snapshots restored WithParallelism)
// and the runtime (a restart whose code has the new parallelism) must
// produce the same counts after the rescale and leave the same state.
func TestRescaleMatchesTheRuntime(t *testing.T) {
	// sdktest.
	g, err := sdktest.NewGraph([]sdk.Factory{func() sdk.Operator { return &source{recs: before} }, func() sdk.Operator { return tally{2} }})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.RunSources(10); err != nil {
		t.Fatal(err)
	}
	if err := g.Checkpoint(1); err != nil {
		t.Fatal(err)
	}
	snaps, ok := g.Snapshot("tally", 1)
	if !ok {
		t.Fatal("sdktest: no snapshot of checkpoint 1")
	}
	g2, err := sdktest.NewGraph([]sdk.Factory{func() sdk.Operator { return tally{3} }}, sdktest.WithSnapshot(snaps...), sdktest.WithParallelism(3))
	if err != nil {
		t.Fatal(err)
	}
	if err := g2.Send("words", after...); err != nil {
		t.Fatal(err)
	}
	want := result{counts: sorted(g2.Output("counts"), countOf)}
	for i := range 3 {
		for _, e := range g2.Instance("tally", i).State() {
			n, _ := sdk.BytesInt64(e.Value)
			want.state = append(want.state, fmt.Sprintf("%d/%s=%d", e.Group, e.Key, n))
		}
	}

	// The runtime: the same data directory, started twice.
	dir := t.TempDir()
	var got result
	for phase, run := range []struct {
		recs []sdk.Record
		par  int
	}{{before, 2}, {after, 3}} {
		c := &collector{recs: map[string][]sdk.Record{}}
		t.Logf("runtime: phase %d: tally at parallelism %d", phase, run.par)
		runNode(t, dir,
			func() sdk.Operator { return &source{recs: run.recs} },
			func() sdk.Operator { return tally{run.par} },
			func() sdk.Operator { return countSink{c} },
		)
		c.mu.Lock()
		got.counts = sorted(c.recs["counts"], countOf)
		c.mu.Unlock()
	}
	got.state = storedCounts(t, dir, "tally")
	if len(want.counts) != len(after) {
		t.Fatalf("sdktest: %d counts after the rescale, want %d: %v", len(want.counts), len(after), want.counts)
	}
	for _, c := range want.counts {
		if !strings.HasSuffix(c, "/3") {
			t.Fatalf("sdktest: count %q after the rescale was not made at parallelism 3", c)
		}
	}
	if !slices.Equal(got.counts, want.counts) {
		t.Errorf("counts after the rescale differ:\nruntime: %q\nsdktest: %q", got.counts, want.counts)
	}
	if !slices.Equal(got.state, want.state) {
		t.Errorf("state after the rescale differs:\nruntime: %q\nsdktest: %q", got.state, want.state)
	}
}

// countSink collects the counts stream.
type countSink struct{ c *collector }

func (countSink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "sink", Inputs: []sdk.Input{{Stream: "counts"}}}
}
func (countSink) Init(sdk.Context) error { return nil }
func (s countSink) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	return sink(s).ProcessRecord(ctx, rec)
}
func (countSink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
