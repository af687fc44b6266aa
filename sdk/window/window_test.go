package window_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
	"github.com/sluicehq/sluice/sdk/window"
)

var t0 = sdktest.Start // aligned on every window size used here

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func rec(key string, sec int, value string) sdk.Record {
	return sdk.Record{Key: []byte(key), EventTime: at(sec), Value: []byte(value)}
}

// harness builds a window operator "w" reading "in", writing "out".
func harness[A any](t *testing.T, cfg window.Config, agg window.Aggregator[A]) *sdktest.Harness {
	t.Helper()
	cfg.Name, cfg.Input, cfg.Output = "w", "in", "out"
	f, err := window.New(cfg, agg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := sdktest.New(f)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// results formats window results as "key[start,end)=value" (seconds from
// t0), or "key=value" for windows without bounds.
func results(recs []sdk.Record) []string {
	var out []string
	for _, r := range recs {
		s, e, ok := window.Bounds(r)
		if !ok {
			out = append(out, fmt.Sprintf("%s=%s", r.Key, r.Value))
			continue
		}
		out = append(out, fmt.Sprintf("%s[%d,%d)=%s", r.Key, int(s.Sub(t0)/time.Second), int(e.Sub(t0)/time.Second), r.Value))
	}
	return out
}

// step is one action on a window harness and what it must produce.
type step struct {
	send []sdk.Record // records to send, or
	wm   int          // the watermark to advance to (seconds from t0), or
	end  bool         // end of input
	want []string     // results produced (see results)
	late []string     // keys sent to w.late
}

func run(t *testing.T, h *sdktest.Harness, steps []step) {
	t.Helper()
	for n, s := range steps {
		var err error
		switch {
		case s.send != nil:
			err = h.Send("in", s.send...)
		case s.end:
			err = h.End()
		default:
			err = h.AdvanceWatermark(at(s.wm))
		}
		if err != nil {
			t.Fatalf("step %d: %v", n, err)
		}
		if got := results(h.Take("out")); !slices.Equal(got, s.want) {
			t.Fatalf("step %d: results: got %v, want %v", n, got, s.want)
		}
		var late []string
		for _, r := range h.Take(window.LateStream("w")) {
			late = append(late, fmt.Sprintf("%s@%d", r.Key, int(r.EventTime.Sub(t0)/time.Second)))
		}
		if !slices.Equal(late, s.late) {
			t.Fatalf("step %d: late: got %v, want %v", n, late, s.late)
		}
	}
}

// empty checks that no window state or timer is left.
func empty(t *testing.T, h *sdktest.Harness) {
	t.Helper()
	if st, tm := h.State(), h.EventTimers(); len(st) != 0 || len(tm) != 0 {
		t.Fatalf("left behind: state %v, event timers %v", st, tm)
	}
}

func TestTumblingOutOfOrderAndRemoval(t *testing.T) {
	h := harness(t, window.Config{Windows: window.Tumbling(10 * time.Second)}, window.Count())
	run(t, h, []step{
		{send: []sdk.Record{rec("a", 1, ""), rec("a", 12, ""), rec("b", 9, ""), rec("a", 5, ""), rec("a", 3, "")}},
		{wm: 9},                               // [0,10) still open: a record at 9 may come
		{send: []sdk.Record{rec("a", 9, "")}}, // on time: at the watermark
		{wm: 10, want: []string{"a[0,10)=4", "b[0,10)=1"}},
		{send: []sdk.Record{rec("b", 2, ""), rec("b", 15, "")}, late: []string{"b@2"}},
		{wm: 25, want: []string{"a[10,20)=1", "b[10,20)=1"}},
	})
	empty(t, h)
}

func TestTumblingLateness(t *testing.T) {
	h := harness(t, window.Config{Windows: window.Tumbling(10 * time.Second), Lateness: 5 * time.Second}, window.Count())
	run(t, h, []step{
		{send: []sdk.Record{rec("a", 1, ""), rec("a", 2, "")}},
		{wm: 10, want: []string{"a[0,10)=2"}},
		{send: []sdk.Record{rec("a", 4, "")}, want: []string{"a[0,10)=3"}}, // late but allowed: an update
		{wm: 14},
		{send: []sdk.Record{rec("a", 9, "")}, want: []string{"a[0,10)=4"}},
		{wm: 15}, // end + lateness: removed
		{send: []sdk.Record{rec("a", 5, "")}, late: []string{"a@5"}},
		// A window first seen within its lateness: emitted at once, removed at end+lateness.
		{wm: 22},
		{send: []sdk.Record{rec("b", 18, "")}, want: []string{"b[10,20)=1"}},
	})
	if tm := h.EventTimers(); len(tm) != 1 || !tm[0].At.Equal(at(25)) {
		t.Fatalf("event timers: got %v, want b's removal at 25s", tm)
	}
	run(t, h, []step{{wm: 25}})
	empty(t, h)
}

func TestHoppingWindows(t *testing.T) {
	h := harness(t, window.Config{Windows: window.Hopping(10*time.Second, 5*time.Second)}, window.Sum(window.DecimalValue))
	run(t, h, []step{
		{send: []sdk.Record{rec("a", 7, "1"), rec("a", 3, "10"), rec("a", 12, "100")}},
		{wm: 10, want: []string{"a[-5,5)=10", "a[0,10)=11"}},
		{wm: 15, want: []string{"a[5,15)=101"}},
		{send: []sdk.Record{rec("a", 14, "1000")}, late: nil}, // [5,15) closed: only [10,20)
		{end: true, want: []string{"a[10,20)=1100"}},
	})
	// The record at 14 went only to [10,20): [5,15) had closed (no lateness).
	empty(t, h)
	// A record whose windows have all closed goes to the late stream.
	h = harness(t, window.Config{Windows: window.Hopping(10*time.Second, 5*time.Second)}, window.Count())
	run(t, h, []step{{wm: 30}, {send: []sdk.Record{rec("a", 19, "")}, late: []string{"a@19"}}})
	empty(t, h)
}

func TestSessionMerge(t *testing.T) {
	h := harness(t, window.Config{Windows: window.Session(5 * time.Second)}, window.Collect(","))
	run(t, h, []step{
		{send: []sdk.Record{rec("a", 1, "1"), rec("a", 10, "10"), rec("b", 3, "b3")}},
		{send: []sdk.Record{rec("a", 7, "7")}}, // [7,12) joins [10,15): [7,15)
		{send: []sdk.Record{rec("a", 4, "4")}}, // [4,9) bridges [1,6) and [7,15): [1,15)
		{wm: 8, want: []string{"b[3,8)=b3"}},
		{send: []sdk.Record{rec("a", 20, "20")}},
		// Merged accumulators in start order, each in arrival order.
		{wm: 15, want: []string{"a[1,15)=1,10,7,4"}},
		// Before the watermark, but its session [14,19) ends after it: a
		// new session (as in Flink); [1,15) is gone.
		{send: []sdk.Record{rec("a", 14, "14")}},
		{send: []sdk.Record{rec("a", 2, "2")}, late: []string{"a@2"}}, // [2,7) ended before the watermark
		{end: true, want: []string{"a[14,19)=14", "a[20,25)=20"}},
	})
	empty(t, h)
}

func TestCountWindows(t *testing.T) {
	for _, emit := range []window.Emit{window.OnClose, window.OnUpdate} {
		t.Run(emit.String(), func(t *testing.T) {
			h := harness(t, window.Config{Windows: window.CountOf(3), Emit: emit}, window.Sum(window.DecimalValue))
			var recs []sdk.Record
			for i := 1; i <= 7; i++ {
				recs = append(recs, sdk.Record{Key: []byte("a"), Value: fmt.Appendf(nil, "%d", i)}) // no event time needed
			}
			want := []string{"a=6", "a=15"}
			if emit == window.OnUpdate {
				want = []string{"a=1", "a=3", "a=6", "a=4", "a=9", "a=15", "a=7"}
			}
			run(t, h, []step{{send: recs, want: want}, {end: true}})
			if st := h.State(); len(st) != 1 {
				t.Fatalf("state: got %v, want the incomplete window only", st)
			}
		})
	}
}

func TestGlobalWindow(t *testing.T) {
	h := harness(t, window.Config{Windows: window.Global()}, window.Count())
	run(t, h, []step{
		{send: []sdk.Record{rec("a", 1, ""), rec("b", 2, ""), rec("a", 500, "")}},
		{wm: 1000},
		{end: true, want: []string{"a=2", "b=1"}},
	})
	empty(t, h)
	h = harness(t, window.Config{Windows: window.Global(), Emit: window.OnUpdate}, window.Count())
	run(t, h, []step{{send: []sdk.Record{rec("a", 1, ""), rec("a", 2, "")}, want: []string{"a=1", "a=2"}}, {end: true}})
}

func TestEmitOnUpdate(t *testing.T) {
	h := harness(t, window.Config{Windows: window.Tumbling(10 * time.Second), Emit: window.OnUpdate}, window.Count())
	run(t, h, []step{
		{send: []sdk.Record{rec("a", 1, ""), rec("a", 2, "")}, want: []string{"a[0,10)=1", "a[0,10)=2"}},
		{wm: 10}, // nothing more at close
		{send: []sdk.Record{rec("a", 3, "")}, late: []string{"a@3"}},
	})
	empty(t, h)
}

func TestRecordWithoutEventTime(t *testing.T) {
	for _, w := range []window.Windows{window.Tumbling(time.Second), window.Hopping(2*time.Second, time.Second), window.Session(time.Second)} {
		h := harness(t, window.Config{Windows: w}, window.Count())
		err := h.Send("in", sdk.Record{Key: []byte("a")})
		if !errors.Is(err, window.ErrNoEventTime) || !strings.Contains(err.Error(), `window operator "w"`) {
			t.Fatalf("%v: got %v, want ErrNoEventTime naming the operator", w, err)
		}
		empty(t, h)
	}
}

func TestResultEventTimeFeedsDownstreamWindows(t *testing.T) {
	// Per-second counts, then per-10-second maxima of them: the first
	// stage's results carry end − 1 ns, so they fall in the right window.
	perSec, err := window.New(window.Config{Name: "persec", Input: "in", Output: "counts", Windows: window.Tumbling(time.Second)}, window.Count())
	if err != nil {
		t.Fatal(err)
	}
	max := window.Funcs[int64]{
		ZeroFunc:   func() int64 { return 0 },
		AddFunc:    func(m int64, r sdk.Record) (int64, error) { v, err := window.DecimalValue(r); return max(m, v), err },
		ResultFunc: func(m int64) []byte { return fmt.Appendf(nil, "%d", m) },
		EncodeFunc: func(dst []byte, m int64) []byte { return fmt.Appendf(dst, "%d", m) },
		DecodeFunc: func(b []byte) (int64, error) { return window.DecimalValue(sdk.Record{Value: b}) },
	}
	peak, err := window.New(window.Config{Name: "peak", Input: "counts", Output: "peaks", Windows: window.Tumbling(10 * time.Second)}, window.Aggregator[int64](max))
	if err != nil {
		t.Fatal(err)
	}
	g, err := sdktest.NewGraph([]sdk.Factory{peak, perSec})
	if err != nil {
		t.Fatal(err)
	}
	var in []sdk.Record
	for s, n := range []int{1, 3, 2, 0, 0, 0, 0, 0, 0, 5, 1} { // 5 records in second 9, 1 in 10
		for range n {
			in = append(in, rec("a", s, ""))
		}
	}
	if err := g.Send("in", in...); err != nil {
		t.Fatal(err)
	}
	if err := g.AdvanceWatermark(at(10)); err != nil {
		t.Fatal(err)
	}
	if got := results(g.Take("peaks")); !slices.Equal(got, []string{"a[0,10)=5"}) {
		t.Fatalf("peaks: got %v", got)
	}
	if err := g.End(); err != nil {
		t.Fatal(err)
	}
	if got := results(g.Take("peaks")); !slices.Equal(got, []string{"a[10,20)=1"}) {
		t.Fatalf("peaks at the end: got %v", got)
	}
}

func TestSessionLateness(t *testing.T) {
	h := harness(t, window.Config{Windows: window.Session(5 * time.Second), Lateness: 5 * time.Second}, window.Count())
	run(t, h, []step{
		{send: []sdk.Record{rec("a", 1, "")}},
		{wm: 6, want: []string{"a[1,6)=1"}},
		// Within the lateness, bridging into the closed session: merged and
		// not closed yet, so it waits for its new end.
		{send: []sdk.Record{rec("a", 5, "")}},
		{wm: 10, want: []string{"a[1,10)=2"}},
		{send: []sdk.Record{rec("a", 2, "")}, want: []string{"a[1,10)=3"}}, // a late update
		{wm: 15},
		{send: []sdk.Record{rec("a", 3, "")}, late: []string{"a@3"}},
	})
	empty(t, h)
}
