package window_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
	"github.com/sluicehq/sluice/sdk/window"
)

var errBoom = errors.New("boom")

// boomSum sums decimal values; a record with value "boom" fails when it
// reaches an empty window, after it was added to the record's other
// (non-empty) windows: the failed attempt has changed the accumulators
// in memory before it fails.
func boomSum() window.Aggregator[int64] {
	return window.Funcs[int64]{
		ZeroFunc: func() int64 { return 0 },
		AddFunc: func(n int64, r sdk.Record) (int64, error) {
			if string(r.Value) == "boom" {
				if n == 0 {
					return n, errBoom
				}
				return n + 1000, nil
			}
			v, err := window.DecimalValue(r)
			return n + v, err
		},
		MergeFunc:  func(a, b int64) int64 { return a + b },
		ResultFunc: func(n int64) []byte { return strconv.AppendInt(nil, n, 10) },
		EncodeFunc: func(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) },
		DecodeFunc: func(b []byte) (int64, error) { return strconv.ParseInt(string(b), 10, 64) },
	}
}

// A failed attempt leaves its changes in the operator's memory; the
// operator is replaced and the next one reads State, where they were
// rolled back.
func TestCacheFailedAttemptRollsBack(t *testing.T) {
	h := harness(t, window.Config{Windows: window.Hopping(20*time.Second, 10*time.Second)}, boomSum())
	if err := h.Send("in", rec("a", 15, "1")); err != nil { // [0,20) and [10,30)
		t.Fatal(err)
	}
	// At 5: first [0,20) (=1: +1000), then [-10,10) (empty: fails).
	if err := h.Send("in", rec("a", 5, "boom")); !errors.Is(err, errBoom) {
		t.Fatalf("got %v, want the aggregator's failure", err)
	}
	if h.Restarts() != 1 {
		t.Fatalf("restarts: got %d, want 1", h.Restarts())
	}
	run(t, h, []step{
		{send: []sdk.Record{rec("a", 12, "2")}},
		{end: true, want: []string{"a[0,20)=3", "a[10,30)=3"}},
	})
	empty(t, h)
}

// After a restart, Init loads the windows of every key group of the
// instance: none is taken for new (which would lose its count).
func TestCacheRestartLoadsEveryKeyGroup(t *testing.T) {
	h := harness(t, window.Config{Windows: window.Tumbling(10 * time.Second), KeyGroups: 64}, boomSum())
	var keys []string
	groups := map[int]bool{}
	for k := range 40 {
		keys = append(keys, fmt.Sprintf("k%d", k))
		if err := h.Send("in", rec(keys[k], 1, "1")); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range h.State() {
		groups[e.Group] = true
	}
	if len(groups) < 2 {
		t.Fatalf("the keys fell in %d key group(s): the test needs several", len(groups))
	}
	if err := h.Send("in", rec("new", 2, "boom")); !errors.Is(err, errBoom) { // a fresh window: fails, restarts
		t.Fatalf("got %v, want the aggregator's failure", err)
	}
	var want []string
	for _, k := range keys {
		if err := h.Send("in", rec(k, 2, "10")); err != nil {
			t.Fatal(err)
		}
		want = append(want, k+"[0,10)=11")
	}
	if err := h.AdvanceWatermark(at(10)); err != nil {
		t.Fatal(err)
	}
	got := results(h.Take("out"))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("results: got %v, want %v", got, want)
	}
	empty(t, h)
}

// Eviction keeps the results exact: a random workload (out of order,
// late records within and past the lateness, failing records) gives the
// same results and leaves no state, whether the cache holds 1, 3 or all
// windows.
func TestCacheEvictionKeepsResults(t *testing.T) {
	configs := map[string]window.Config{
		"tumbling lateness": {Windows: window.Tumbling(10 * time.Second), Lateness: 7 * time.Second},
		"hopping lateness":  {Windows: window.Hopping(30*time.Second, 10*time.Second), Lateness: 5 * time.Second},
		"hopping on update": {Windows: window.Hopping(20*time.Second, 5*time.Second), Emit: window.OnUpdate},
		"count":             {Windows: window.CountOf(4)},
		"count on update":   {Windows: window.CountOf(3), Emit: window.OnUpdate},
		"global":            {Windows: window.Global()},
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			var first []string
			for _, limit := range []int{0, 1, 3} {
				cfg.CacheWindows = limit
				h := harness(t, cfg, boomSum())
				got := workload(t, h)
				if name != "count" && name != "count on update" { // count windows keep their incomplete windows
					empty(t, h)
				}
				if len(got) == 0 {
					t.Fatal("no results")
				}
				if limit == 0 {
					first = got
				} else if !slices.Equal(got, first) {
					j := 0
					for j < min(len(got), len(first)) && got[j] == first[j] {
						j++
					}
					t.Fatalf("cache of %d windows: %d outputs, the default cache's %d; first difference at %d: got %v, want %v",
						limit, len(got), len(first), j, got[j:min(j+5, len(got))], first[j:min(j+5, len(first))])
				}
			}
		})
	}
}

// workload sends a seeded random stream of records over 5 keys with the
// watermark trailing the event times, then ends the input; it returns the
// results and late records in order.
func workload(t *testing.T, h *sdktest.Harness) []string {
	t.Helper()
	rnd := rand.New(rand.NewPCG(1, 2))
	var out []string
	take := func() {
		out = append(out, results(h.Take("out"))...)
		for _, r := range h.Take(window.LateStream("w")) {
			out = append(out, fmt.Sprintf("late %s@%v", r.Key, r.EventTime.Sub(t0)))
		}
	}
	wm := 0
	for j := range 400 {
		sec := wm - 10 + rnd.IntN(30) // up to 10 s behind the watermark
		v := strconv.Itoa(rnd.IntN(9) + 1)
		if j%37 == 5 {
			v = "boom"
		}
		err := h.Send("in", rec(fmt.Sprintf("k%d", rnd.IntN(5)), sec, v))
		if err != nil && !errors.Is(err, errBoom) {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("error %v", err != nil))
		if j%5 == 4 {
			wm += rnd.IntN(4)
			if err := h.AdvanceWatermark(at(wm)); err != nil {
				t.Fatal(err)
			}
		}
		take()
	}
	if err := h.End(); err != nil {
		t.Fatal(err)
	}
	take()
	return out
}

func TestCacheWindowsConfig(t *testing.T) {
	_, err := window.New(window.Config{Name: "w", Input: "in", Output: "out", Windows: window.Global(), CacheWindows: -1}, window.Count())
	var ce *window.ConfigError
	if !errors.As(err, &ce) || ce.Field != "cache-windows" {
		t.Fatalf("got %v, want a ConfigError on cache-windows", err)
	}
}

// A key's tumbling or hopping windows share one event timer, at the
// earliest deadline: the end of an open window, then end+lateness of a
// closed one.
func TestOneTimerPerKey(t *testing.T) {
	h := harness(t, window.Config{Windows: window.Hopping(30*time.Second, 10*time.Second), Lateness: 5 * time.Second}, window.Count())
	timers := func(want ...int) {
		t.Helper()
		var got []string
		for _, tm := range h.EventTimers() {
			got = append(got, fmt.Sprint(int(tm.At.Sub(t0)/time.Second)))
		}
		var ws []string
		for _, w := range want {
			ws = append(ws, fmt.Sprint(w))
		}
		if !slices.Equal(got, ws) {
			t.Fatalf("event timers at %v s, want %v s", got, ws)
		}
	}
	run(t, h, []step{{send: []sdk.Record{rec("a", 12, ""), rec("b", 25, "")}}}) // a: [-10,20), [0,30), [10,40); b: [0,30), [10,40), [20,50)
	timers(20, 30)
	run(t, h, []step{{wm: 20, want: []string{"a[-10,20)=1"}}})
	timers(25, 30) // a: [-10,20) closed, until 25
	run(t, h, []step{{wm: 26}})
	timers(30, 30) // a: [0,30) next
	run(t, h, []step{{wm: 30, want: []string{"a[0,30)=1", "b[0,30)=1"}}})
	timers(35, 35)
	run(t, h, []step{{end: true, want: []string{"a[10,40)=1", "b[10,40)=1", "b[20,50)=1"}}})
	empty(t, h)
}
