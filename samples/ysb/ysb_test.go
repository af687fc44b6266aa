package ysb_test

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/samples/ysb"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// check compares the sink's results with the expected answer exactly.
func check(t *testing.T, cfg ysb.Config, res *ysb.Results) {
	t.Helper()
	want := ysb.Expected(cfg)
	got, dups, n := res.Snapshot()
	if len(dups) > 0 {
		t.Fatalf("%d windows emitted more than once, e.g. %v", len(dups), dups[0])
	}
	if !maps.Equal(got, want) {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("window %v: got %d, want %d", k, got[k], v)
			}
		}
		for k, v := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected window %v = %d", k, v)
			}
		}
		t.Fatalf("%d results, want %d", n, len(want))
	}
}

func TestExpectedIsPlausible(t *testing.T) {
	cfg := ysb.Config{Events: 30000, EventsPerSecond: 1000, Seed: 1}
	want := ysb.Expected(cfg)
	var views int64
	starts := map[int64]bool{}
	for k, v := range want {
		views += v
		starts[k.Start] = true
	}
	// A third of the events are views; 30 s of events: 3 windows.
	if views < 9000 || views > 11000 || len(starts) != 3 || len(want) != 3*ysb.Campaigns {
		t.Fatalf("%d views over %d windows of %d campaign-windows", views, len(starts), len(want))
	}
}

// builds are the pipeline's two versions: hand-written and on sdk/stream,
// with the name of their window operator.
var builds = []struct {
	name, windows string
	operators     func(ysb.Config, *ysb.Results) ([]sdk.Factory, error)
}{
	{"hand-written", ysb.WindowsName, ysb.Operators},
	{"typed", ysb.TypedWindowsName, ysb.TypedOperators},
}

// TestPipelineExact runs the whole pipeline, hand-written and typed, in
// sdktest with parallelism 1 and 4 on every stage, the watermark following
// the sources (a monotonic watermark strategy), and checks the sink's
// results exactly.
func TestPipelineExact(t *testing.T) {
	for _, b := range builds {
		for _, p := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/parallelism-%d", b.name, p), func(t *testing.T) {
				cfg := ysb.Config{Events: 15000, EventsPerSecond: 500, Seed: 7, Parallelism: p, Batch: 200}
				res := ysb.NewResults()
				fs, err := b.operators(cfg, res)
				if err != nil {
					t.Fatal(err)
				}
				g, err := sdktest.NewGraph(fs)
				if err != nil {
					t.Fatal(err)
				}
				midway := false
				for polls := 0; ; polls++ {
					if polls > 1000 {
						t.Fatal("the sources did not end")
					}
					done, err := g.PollSources()
					if err != nil {
						t.Fatal(err)
					}
					if done {
						break
					}
					if _, _, n := res.Snapshot(); n > 0 {
						midway = true
					}
				}
				if !midway {
					t.Fatal("no window closed before the end of the input")
				}
				if err := g.End(); err != nil {
					t.Fatal(err)
				}
				check(t, cfg, res)
				for j := range p {
					if st := g.Instance(b.windows, j).State(); len(st) != 0 {
						t.Fatalf("windows instance %d keeps %d entries after the end", j, len(st))
					}
				}
			})
		}
	}
}

func TestParseRejectsUnknownAd(t *testing.T) {
	cfg := ysb.Config{Events: 1}
	fs, err := ysb.Operators(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := sdktest.New(fs[1])
	if err != nil {
		t.Fatal(err)
	}
	err = h.Send(ysb.EventsStream, sdk.Record{Value: []byte(`{"ad_id":"nope","event_type":"view"}`), EventTime: sdktest.Start})
	if err == nil || len(h.Output(ysb.ViewsStream)) != 0 {
		t.Fatalf("unknown ad: got %v", err)
	}
	if err := h.Send(ysb.EventsStream, sdk.Record{Value: []byte(`{"event_type":`)}); err == nil {
		t.Fatal("truncated JSON accepted")
	}
}

// TestTypedRefusesBadEvents sends the typed pipeline's parse stage an
// unknown ad and broken JSON: each fails as a bad record (which the
// runtime dead-letters at once) with AdCodec's error, and the view after
// them still counts.
func TestTypedRefusesBadEvents(t *testing.T) {
	fs, err := ysb.TypedOperators(ysb.Config{Events: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := sdktest.NewGraph(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ event, says string }{
		{`{"ad_id":"nope","event_type":"view"}`, `ysb-ad into ysb.Ad: ysb: unknown ad_id "nope"`},
		{`{"event_type":`, "ysb-ad into ysb.Ad"},
	} {
		err := g.Send(ysb.EventsStream, sdk.Record{Value: []byte(c.event), EventTime: sdktest.Start})
		if !errors.Is(err, sdk.ErrBadRecord) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("event %s: got %v, want a bad record saying %q", c.event, err, c.says)
		}
	}
	good := `{"ad_id":"` + ysb.NewTable(0).Ads[0] + `","event_type":"view"}`
	if err := g.Send(ysb.EventsStream, sdk.Record{Value: []byte(good), EventTime: sdktest.Start}); err != nil {
		t.Fatal(err)
	}
	if err := g.End(); err != nil {
		t.Fatal(err)
	}
	if got := g.Take(ysb.CountsStream); len(got) != 1 || string(got[0].Value) != "1" {
		t.Fatalf("counts %v, want one window counting 1", got)
	}
}
