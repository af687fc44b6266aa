package actors_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/topology"
)

// etEvent is one record an etSource produces.
type etEvent struct {
	key string
	at  time.Time
}

// etSource produces events[0:gate) in order, keeping its position in
// state, with a watermark strategy; bounded, it ends after the last.
type etSource struct {
	name, stream string
	events       []etEvent
	gate         *atomic.Int64
	strategy     *core.WatermarkStrategy
	bounded      bool
	next         int
}

func (s *etSource) Metadata() core.Metadata {
	return core.Metadata{Name: s.name, Outputs: []string{s.stream}, Watermarks: s.strategy}
}

func (s *etSource) Init(ctx core.Context) error {
	v, err := ctx.State().Get([]byte("next"))
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	s.next, err = strconv.Atoi(string(v))
	return err
}

func (s *etSource) Poll(ctx core.Context) error {
	limit := min(int(s.gate.Load()), len(s.events))
	for n := 0; s.next < limit && n < 64; n++ {
		e := s.events[s.next]
		if err := ctx.Produce(s.stream, core.Record{Key: []byte(e.key), Value: []byte(strconv.Itoa(s.next)), EventTime: e.at}); err != nil {
			return err
		}
		s.next++
	}
	ctx.State().Set([]byte("next"), []byte(strconv.Itoa(s.next)))
	if s.bounded && s.next == len(s.events) {
		return fmt.Errorf("all %d events produced: %w", s.next, core.ErrEndOfStream)
	}
	return nil
}

func (s *etSource) ProcessRecord(core.Context, core.Record) error      { return nil }
func (s *etSource) ProcessTimer(core.Context, string, time.Time) error { return nil }
func (s *etSource) ResumesFromState()                                  {}

// windows counts records per key in tumbling event-time windows of size
// and emits "key@end" = count when the watermark passes the window's end.
type windows struct {
	par      int
	size     time.Duration
	early    *atomic.Int64 // timers fired before the watermark reached them
	late     *atomic.Int64 // records behind the watermark
	failOnce *sync.Map     // timer or record value → failed already (panics once)
	failKeys map[string]bool
}

func (w *windows) Metadata() core.Metadata {
	return core.Metadata{Name: "windows", Inputs: []core.Input{{Stream: "events", Routing: core.GroupBy}},
		Outputs: []string{"counts"}, Parallelism: max(w.par, 1)}
}

func (w *windows) Init(core.Context) error { return nil }

func (w *windows) ProcessRecord(ctx core.Context, rec core.Record) error {
	if rec.EventTime.Before(ctx.Watermark()) {
		w.late.Add(1)
	}
	end := rec.EventTime.Truncate(w.size).Add(w.size)
	k := string(rec.Key) + "@" + strconv.FormatInt(end.UnixNano(), 10)
	n, err := sdk.GetInt64(ctx.State(), []byte(k))
	if err != nil {
		return err
	}
	sdk.PutInt64(ctx.State(), []byte(k), n+1)
	if err := ctx.SetEventTimer(k, end); err != nil {
		return err
	}
	w.maybeFail("rec" + string(rec.Value))
	return nil
}

func (w *windows) ProcessEventTimer(ctx core.Context, key string, at time.Time) error {
	if ctx.Watermark().Before(at) {
		w.early.Add(1)
	}
	n, err := sdk.GetInt64(ctx.State(), []byte(key))
	if err != nil {
		return err
	}
	ctx.State().Delete([]byte(key))
	if err := ctx.Produce("counts", core.Record{Key: []byte(key), Value: []byte(strconv.FormatInt(n, 10))}); err != nil {
		return err
	}
	w.maybeFail("timer" + key)
	return nil
}

// maybeFail panics the first time it sees one of failKeys.
func (w *windows) maybeFail(what string) {
	if w.failKeys[what] {
		if _, done := w.failOnce.LoadOrStore(what, true); !done {
			panic("first attempt at " + what + " fails")
		}
	}
}

func (w *windows) ProcessTimer(core.Context, string, time.Time) error { return nil }

// etEvents returns n events over keys, 5 ms apart from base, each up to
// 20 ms early (out of order by at most 20 ms).
func etEvents(n, keys int, base time.Time) []etEvent {
	out := make([]etEvent, n)
	for i := range out {
		jitter := time.Duration((i*7)%5) * 5 * time.Millisecond
		out[i] = etEvent{key: fmt.Sprintf("k%d", i%keys), at: base.Add(time.Duration(i)*5*time.Millisecond - jitter)}
	}
	return out
}

// expectedWindows counts events[:n] per key@end of their window; only
// windows ending at or before wm (the end of time: every one).
func expectedWindows(events []etEvent, size time.Duration, wm time.Time) map[string]string {
	counts := map[string]int{}
	for _, e := range events {
		end := e.at.Truncate(size).Add(size)
		if !end.After(wm) {
			counts[e.key+"@"+strconv.FormatInt(end.UnixNano(), 10)]++
		}
	}
	out := map[string]string{}
	for k, n := range counts {
		out[k] = strconv.Itoa(n)
	}
	return out
}

// windowOutputs returns what the sink received, failing on a window
// emitted twice.
func windowOutputs(t *testing.T, c *sluicetest.Collector) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range c.All() {
		k := string(d.Record.Key)
		if _, dup := out[k]; dup {
			t.Fatalf("window %s emitted twice", k)
		}
		out[k] = string(d.Record.Value)
	}
	return out
}

func sameWindows(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d windows emitted, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("window %s = %q, want %q", k, got[k], v)
		}
	}
}

func statusesOf(n *actors.Node, op string) []status.InstanceStatus {
	for _, st := range n.Status() {
		if st.Name == op {
			return st.Instances
		}
	}
	return nil
}

// allInstances reports whether every instance of op on n satisfies ok.
func allInstances(n *actors.Node, op string, ok func(status.InstanceStatus) bool) bool {
	for _, st := range statusesOf(n, op) {
		if !ok(st) {
			return false
		}
	}
	return true
}

// maxEvent returns the largest event time of events.
func maxEvent(events []etEvent) time.Time {
	var m time.Time
	for _, e := range events {
		if e.at.After(m) {
			m = e.at
		}
	}
	return m
}

const outOfOrder = 25 * time.Millisecond

// TestEventTimersFireWhenTheWatermarkPasses: a source with bounded
// out-of-orderness and a window operator setting event-time timers: the
// windows ending at or before the watermark (max event − 25 ms) fire, each
// once, never before the watermark reached them, through a panicking
// record and a panicking timer; when the bounded source ends, every other
// window fires and every instance finishes.
func TestEventTimersFireWhenTheWatermarkPasses(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	events := etEvents(400, 4, base)
	gate := &atomic.Int64{}
	gate.Store(200)
	var early, late atomic.Int64
	out := &sluicetest.Collector{}
	firstWM := maxEvent(events[:200]).Add(-outOfOrder)
	// A window closed by the first watermark, and a record of the first half.
	failTimer := "timerk1@" + strconv.FormatInt(base.Add(300*time.Millisecond).UnixNano(), 10)
	failOnce := &sync.Map{}
	n := startNode(t, t.TempDir(),
		func() core.Operator {
			return &etSource{name: "src", stream: "events", events: events, gate: gate, bounded: true,
				strategy: &core.WatermarkStrategy{OutOfOrderness: outOfOrder, Interval: 5 * time.Millisecond}}
		},
		func() core.Operator {
			return &windows{par: 2, size: 100 * time.Millisecond, early: &early, late: &late, failOnce: failOnce,
				failKeys: map[string]bool{failTimer: true, "rec77": true}}
		},
		func() core.Operator {
			return &sluicetest.Sink{Name: "sink", Inputs: []core.Input{{Stream: "counts"}}, Into: out}
		},
	)
	want := expectedWindows(events[:200], 100*time.Millisecond, firstWM)
	sluicetest.WaitFor(t, 30*time.Second, fmt.Sprintf("the %d windows before the first watermark", len(want)),
		func() bool { return out.Len() >= len(want) })
	sluicetest.WaitFor(t, 30*time.Second, "the windows operator's watermark", func() bool {
		return allInstances(n, "windows", func(st status.InstanceStatus) bool { return st.Watermark.Equal(firstWM) })
	})
	sameWindows(t, windowOutputs(t, out), want)
	if _, ok := failOnce.Load(failTimer); !ok {
		t.Fatalf("the timer %s never ran", failTimer)
	}

	gate.Store(int64(len(events)))
	want = expectedWindows(events, 100*time.Millisecond, time.Unix(0, 1<<62))
	sluicetest.WaitFor(t, 30*time.Second, "every window after the end of stream", func() bool { return out.Len() >= len(want) })
	finished := func(st status.InstanceStatus) bool { return st.Finished }
	sluicetest.WaitFor(t, 30*time.Second, "every instance finished", func() bool {
		return allInstances(n, "src", finished) && allInstances(n, "windows", finished) && allInstances(n, "sink", finished)
	})
	sameWindows(t, windowOutputs(t, out), want)
	if early.Load() != 0 || late.Load() != 0 {
		t.Fatalf("%d timers fired before the watermark, %d records behind it; want none", early.Load(), late.Load())
	}
	restarts := 0
	for _, st := range statusesOf(n, "windows") {
		restarts += st.Restarts
		if st.DeadLetters != 0 {
			t.Fatalf("windows/%d: %d dead letters, want none", st.Index, st.DeadLetters)
		}
	}
	if restarts != 2 {
		t.Fatalf("windows restarted %d times, want 2 (a record and a timer failed once each)", restarts)
	}
}

// notEventTimed sets an event-time timer without ProcessEventTimer.
type notEventTimed struct{ err chan error }

func (notEventTimed) Metadata() core.Metadata {
	return core.Metadata{Name: "plain", Inputs: []core.Input{{Stream: "in"}}}
}
func (notEventTimed) Init(core.Context) error { return nil }
func (o notEventTimed) ProcessRecord(ctx core.Context, rec core.Record) error {
	o.err <- ctx.SetEventTimer("k", time.Now())
	return nil
}
func (notEventTimed) ProcessTimer(core.Context, string, time.Time) error { return nil }

func TestSetEventTimerWithoutProcessEventTimerNamesTheOperator(t *testing.T) {
	errs := make(chan error, 1)
	n := startNode(t, t.TempDir(), func() core.Operator { return notEventTimed{errs} })
	sluicetest.Must(t, n.Produce(context.Background(), "in", core.Record{Key: []byte("k")}))
	select {
	case err := <-errs:
		if !errors.Is(err, core.ErrNotEventTimerProcessor) || !strings.Contains(err.Error(), `"plain"`) {
			t.Fatalf("SetEventTimer: %v, want ErrNotEventTimerProcessor naming operator \"plain\"", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the record was not processed")
	}
}

// rescale deploys op's metadata with parallelism par (a new epoch).
func rescale(t *testing.T, n *actors.Node, kind string, meta core.Metadata) {
	t.Helper()
	_, err := topology.Update(context.Background(), n.Store(), 5, func(cur topology.Topology) (topology.Topology, error) {
		next, _, err := cur.Deploy(topology.OperatorSpec{Kind: kind, Meta: meta}, time.Now())
		return next, err
	})
	sluicetest.Must(t, err)
	sluicetest.WaitFor(t, 30*time.Second, "the rescaled instances running", func() bool {
		sts := statusesOf(n, meta.Name)
		running := 0
		for _, st := range sts {
			if st.State == status.StateRunning {
				running++
			}
		}
		return running == meta.Parallelism
	})
}

// TestEventTimersSurviveRescaleAndRestart: windows pending when the
// window operator is rescaled from 1 to 3 instances, and when the node
// restarts, fire once the watermark passes them, each once, with exact
// counts; the restarted source resumes its watermark.
func TestEventTimersSurviveRescaleAndRestart(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	events := etEvents(600, 8, base)
	gate := &atomic.Int64{}
	gate.Store(200)
	var early, late atomic.Int64
	out := &sluicetest.Collector{}
	dir := t.TempDir()
	size := 100 * time.Millisecond
	ops := func(par int) []core.Factory {
		return []core.Factory{
			func() core.Operator {
				return &etSource{name: "src", stream: "events", events: events, gate: gate, bounded: true,
					strategy: &core.WatermarkStrategy{OutOfOrderness: outOfOrder, Interval: 5 * time.Millisecond}}
			},
			func() core.Operator { return &windows{par: par, size: size, early: &early, late: &late} },
			func() core.Operator {
				return &sluicetest.Sink{Name: "sink", Inputs: []core.Input{{Stream: "counts"}}, Into: out}
			},
		}
	}
	waitWindows := func(n *actors.Node, upTo int) {
		t.Helper()
		wm := maxEvent(events[:upTo]).Add(-outOfOrder)
		want := expectedWindows(events[:upTo], size, wm)
		sluicetest.WaitFor(t, 30*time.Second, fmt.Sprintf("%d windows", len(want)), func() bool { return out.Len() >= len(want) })
		sluicetest.WaitFor(t, 30*time.Second, "the watermark", func() bool {
			return allInstances(n, "windows", func(st status.InstanceStatus) bool {
				return st.State != status.StateRunning || st.Watermark.Equal(wm)
			})
		})
		sameWindows(t, windowOutputs(t, out), want)
	}
	n := startNode(t, dir, ops(1)...)
	waitWindows(n, 200)
	rescale(t, n, "windows", (&windows{par: 3}).Metadata())
	gate.Store(400)
	waitWindows(n, 400)
	stop(t, n)

	gate.Store(500)
	n = startNode(t, dir, ops(3)...)
	waitWindows(n, 500)
	for _, st := range statusesOf(n, "src") {
		if st.Watermark.IsZero() {
			t.Fatal("the restarted source has no watermark")
		}
	}
	gate.Store(int64(len(events)))
	want := expectedWindows(events, size, time.Unix(0, 1<<62))
	sluicetest.WaitFor(t, 30*time.Second, "every window", func() bool { return out.Len() >= len(want) })
	sameWindows(t, windowOutputs(t, out), want)
	if early.Load() != 0 || late.Load() != 0 {
		t.Fatalf("%d timers fired before the watermark, %d records behind it; want none", early.Load(), late.Load())
	}
}

// wmProbe reads two streams and does nothing; the test reads its watermark
// from its status.
type wmProbe struct{}

func (wmProbe) Metadata() core.Metadata {
	return core.Metadata{Name: "probe", Inputs: []core.Input{{Stream: "a"}, {Stream: "b"}}}
}
func (wmProbe) Init(core.Context) error                            { return nil }
func (wmProbe) ProcessRecord(core.Context, core.Record) error      { return nil }
func (wmProbe) ProcessTimer(core.Context, string, time.Time) error { return nil }

// TestWatermarkIsTheMinimumOverInputsAndIdleInputsDoNotHoldIt: an operator
// reading two sources has the smaller of their watermarks; once the
// slower one is idle (nothing produced for its idleness timeout), the
// faster one's.
func TestWatermarkIsTheMinimumOverInputsAndIdleInputsDoNotHoldIt(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fast, slow := etEvents(200, 2, base), etEvents(200, 2, base)
	fastGate, slowGate := &atomic.Int64{}, &atomic.Int64{}
	fastGate.Store(200)
	slowGate.Store(50)
	idleAfter := &atomic.Bool{}
	n := startNode(t, t.TempDir(),
		func() core.Operator {
			return &etSource{name: "fast", stream: "a", events: fast, gate: fastGate,
				strategy: &core.WatermarkStrategy{Interval: 5 * time.Millisecond}}
		},
		func() core.Operator {
			s := &core.WatermarkStrategy{Interval: 5 * time.Millisecond}
			if idleAfter.Load() {
				s.Idleness = 100 * time.Millisecond
			}
			return &etSource{name: "slow", stream: "b", events: slow, gate: slowGate, strategy: s}
		},
		func() core.Operator { return wmProbe{} },
	)
	probeWM := func() time.Time {
		if sts := statusesOf(n, "probe"); len(sts) == 1 {
			return sts[0].Watermark
		}
		return time.Time{}
	}
	slowMax, fastMax := maxEvent(slow[:50]), maxEvent(fast)
	sluicetest.WaitFor(t, 30*time.Second, "the slow source's watermark", func() bool { return probeWM().Equal(slowMax) })
	slowGate.Store(120)
	slowMax = maxEvent(slow[:120])
	sluicetest.WaitFor(t, 30*time.Second, "the slow source's next watermark", func() bool { return probeWM().Equal(slowMax) })
	if got := probeWM(); got.After(slowMax) {
		t.Fatalf("watermark %v passed the slow input's %v", got, slowMax)
	}

	// The slow source, redeployed with an idleness timeout, goes idle.
	idleAfter.Store(true)
	meta := (&etSource{name: "slow", stream: "b", strategy: &core.WatermarkStrategy{Interval: 5 * time.Millisecond, Idleness: 100 * time.Millisecond}}).Metadata()
	_, err := topology.Update(context.Background(), n.Store(), 5, func(cur topology.Topology) (topology.Topology, error) {
		next, _, err := cur.Deploy(topology.OperatorSpec{Kind: "slow", Meta: meta}, time.Now())
		return next, err
	})
	sluicetest.Must(t, err)
	sluicetest.WaitFor(t, 30*time.Second, "the fast source's watermark once the slow one is idle", func() bool { return probeWM().Equal(fastMax) })
}

// punctuated is an etSource with its own watermarks: whatever wm holds.
type punctuated struct {
	etSource
	wm *atomic.Int64
}

func (p *punctuated) CurrentWatermark(core.Context) time.Time { return time.Unix(0, p.wm.Load()) }

// TestWatermarkGeneratorNeverGoesBack: a source's WatermarkGenerator sets
// its watermark, which reaches its readers; one going back is held.
func TestWatermarkGeneratorNeverGoesBack(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	wm, gate := &atomic.Int64{}, &atomic.Int64{}
	wm.Store(base.Add(time.Minute).UnixNano())
	n := startNode(t, t.TempDir(),
		func() core.Operator {
			return &punctuated{etSource{name: "fast", stream: "a", gate: gate, strategy: &core.WatermarkStrategy{Interval: time.Millisecond}}, wm}
		},
		func() core.Operator {
			return &punctuated{etSource{name: "other", stream: "b", gate: gate, strategy: &core.WatermarkStrategy{Interval: time.Millisecond}},
				&atomic.Int64{}}
		},
		func() core.Operator { return wmProbe{} },
	)
	srcWM := func() time.Time {
		if sts := statusesOf(n, "fast"); len(sts) == 1 {
			return sts[0].Watermark
		}
		return time.Time{}
	}
	sluicetest.WaitFor(t, 30*time.Second, "the generated watermark", func() bool { return srcWM().Equal(base.Add(time.Minute)) })
	wm.Store(base.UnixNano()) // backwards: held
	wm.Store(base.Add(2 * time.Minute).UnixNano())
	sluicetest.WaitFor(t, 30*time.Second, "the next generated watermark", func() bool { return srcWM().Equal(base.Add(2 * time.Minute)) })
	wm.Store(base.UnixNano())
	// The probe reads "other" too, whose generator says 1970: its watermark
	// is the minimum, never past it.
	if got := statusesOf(n, "probe"); len(got) == 1 && got[0].Watermark.After(time.Unix(0, 0)) {
		t.Fatalf("probe watermark %v, want at most the other input's (1970)", got[0].Watermark)
	}
	// A backwards answer never lowers the source's watermark.
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		if got := srcWM(); !got.Equal(base.Add(2 * time.Minute)) {
			t.Fatalf("source watermark %v after the generator went back, want it held at %v", got, base.Add(2*time.Minute))
		}
		runtime.Gosched()
	}
}
