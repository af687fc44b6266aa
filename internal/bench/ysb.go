package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/samples/ysb"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// YSBConfig sets up one run of the Yahoo Streaming Benchmark pipeline
// (samples/ysb) on an embedded runtime.
type YSBConfig struct {
	// Events is the number of events generated (a bounded stream).
	Events int64
	// Parallelism of every stage; 0 means 2.
	Parallelism int
	// Rate paces the whole source (events/s over all its instances); 0
	// means unthrottled.
	Rate float64
	// ExactlyOnce runs with checkpoints every second to a directory
	// store; otherwise the run has no guarantee.
	ExactlyOnce bool
	// Latency measures each window count's latency (see YSB).
	Latency bool
	// EventsPerSecond is the event-time density (ysb.Config's); 0 means
	// the sample's 10,000: a 10 s window holds 100 k events.
	EventsPerSecond int64
	// Typed runs the pipeline written on sdk/stream (ysb.TypedOperators)
	// instead of the hand-written one.
	Typed bool
}

// YSBResult is one YSB run: the events over the time from the first event
// generated to the sink finishing, and, with Latency, one latency per
// window count.
type YSBResult struct {
	Result
	// Windows is the number of window counts at the sink (all checked
	// against ysb.Expected).
	Windows int
}

// YSB runs the YSB pipeline over a bounded stream of cfg.Events events and
// checks that the sink's counts are exactly ysb.Expected (an error says
// how they differ). The time runs from the first event generated to the
// sink having finished (end-of-stream reached it). With cfg.Latency, each
// window count's latency is the wall time from the watermark passing the
// window's end to the count reaching the sink: the watermark passes it
// when every source instance has generated its first event at or after
// the end (the sources' watermarks follow their event times with no
// out-of-orderness), so the moment is the latest of those instances'
// generation times. The window closed by end-of-stream has none.
func YSB(cfg YSBConfig) (YSBResult, error) {
	if cfg.Parallelism == 0 {
		cfg.Parallelism = 2
	}
	ycfg := ysb.Config{Events: cfg.Events, EventsPerSecond: cfg.EventsPerSecond, Seed: 7, Parallelism: cfg.Parallelism}
	if cfg.Rate > 0 {
		ycfg.Rate = cfg.Rate / float64(cfg.Parallelism)
	}
	ycfg = ycfg.WithDefaults()
	want := ysb.Expected(ycfg)
	operators := ysb.Operators
	if cfg.Typed {
		operators = ysb.TypedOperators
	}
	fs, err := operators(ycfg, nil) // the source first
	if err != nil {
		return YSBResult{}, err
	}
	sink := &ysbSink{par: cfg.Parallelism, counts: map[ysb.WindowKey]int64{}, at: map[ysb.WindowKey]time.Time{}}
	marks := newWindowMarks(ycfg, cfg.Latency)
	fs[0] = marks.wrap(fs[0])
	fs = append(fs, func() sdk.Operator { return sink })

	end, cpu, err := runBounded(cfg.ExactlyOnce, ysb.SinkName, fs)
	if err != nil {
		return YSBResult{}, fmt.Errorf("ysb: %w (%d of %d window counts)", err, sink.len(), len(want))
	}
	if err := sink.check(want); err != nil {
		return YSBResult{}, err
	}
	start, cpu0, err := marks.first.get()
	if err != nil {
		return YSBResult{}, err
	}
	r := YSBResult{Result: Result{Ops: cfg.Events, Elapsed: end.Sub(start), CPU: cpu - cpu0}, Windows: len(want)}
	if cfg.Latency {
		r.Latencies = marks.latencies(sink, ycfg)
	}
	return r, nil
}

// runBounded runs the operators of a bounded stream on an embedded
// runtime in a temporary directory (exactly-once with checkpoints every
// 1 s, or no guarantee) until the operator named sink finished, and
// returns the wall and process CPU time then.
func runBounded(exactly bool, sink string, fs []sdk.Factory) (end time.Time, cpu time.Duration, err error) {
	dir, err := os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		return end, 0, err
	}
	defer os.RemoveAll(dir)
	scfg := node.Config{
		NodeConfig: node.NodeConfig{NodeID: "bench", DataDir: dir, NoSync: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		Telemetry:  &node.TelemetryConfig{},
		Guarantee:  sdk.NoGuarantee,
	}
	if exactly {
		scfg.Guarantee, scfg.CheckpointInterval = sdk.ExactlyOnce, time.Second
		scfg.Checkpoints = filepath.Join(dir, "checkpoints")
	}
	rt, err := node.Start(context.Background(), scfg, fs...)
	if err != nil {
		return end, 0, err
	}
	defer rt.Stop(context.Background())
	if err := waitSinkFinished(rt, sink, 10*time.Minute); err != nil {
		return end, 0, err
	}
	return time.Now(), processCPU(), nil
}

// waitSinkFinished polls the runtime until every instance of the operator
// named sink has finished (end-of-stream reached it after every record:
// nothing more will come), or the timeout passes. It polls every 20 ms: a
// status costs the runtime a disk-usage estimate per instance (polled
// every 2 ms, 3.5 % of a q5 run's CPU), and a run takes seconds, so the
// end is seen late by under 1 %.
func waitSinkFinished(rt *node.Runtime, sink string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if sinkFinished(rt, sink) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("the sink did not finish within %v", timeout)
}

// sinkFinished reports whether every instance of operator name finished.
func sinkFinished(rt *node.Runtime, name string) bool {
	for _, st := range rt.Status() {
		if st.Name != name {
			continue
		}
		for _, in := range st.Instances {
			if !in.Finished {
				return false
			}
		}
		return len(st.Instances) > 0
	}
	return false
}

// ysbSink keeps each window count and the wall time it arrived.
type ysbSink struct {
	par    int
	mu     sync.Mutex
	counts map[ysb.WindowKey]int64
	at     map[ysb.WindowKey]time.Time
	dups   int
}

func (s *ysbSink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: ysb.SinkName, Inputs: []sdk.Input{{Stream: ysb.CountsStream, Routing: sdk.GroupBy}}, Parallelism: s.par}
}
func (s *ysbSink) Init(sdk.Context) error { return nil }
func (s *ysbSink) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	now := time.Now()
	k, n, err := ysb.ResultOf(rec)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.counts[k]; ok {
		s.dups++
	} else {
		s.at[k] = now
	}
	s.counts[k] = n
	return nil
}
func (s *ysbSink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

func (s *ysbSink) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.counts)
}

// check returns an error unless the counts are exactly want, each once.
func (s *ysbSink) check(want map[ysb.WindowKey]int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	wrong := 0
	for k, n := range want {
		if s.counts[k] != n {
			wrong++
		}
	}
	if s.dups > 0 || wrong > 0 || len(s.counts) != len(want) {
		return fmt.Errorf("ysb: %w: %d window counts (%d duplicates, %d wrong or missing), want %d", errWrongOutput, len(s.counts), s.dups, wrong, len(want))
	}
	return nil
}

// windowMarks records, per source instance, the wall time at which it
// generated its first event at or after each window's end, and the time
// of the run's first event.
type windowMarks struct {
	cfg     ysb.Config
	latency bool
	first   firstEvent
	mu      sync.Mutex
	passed  []map[int64]time.Time // per instance: window index → when its end was passed
}

func newWindowMarks(cfg ysb.Config, latency bool) *windowMarks {
	m := &windowMarks{cfg: cfg, latency: latency, passed: make([]map[int64]time.Time, cfg.SourceParallelism)}
	for i := range m.passed {
		m.passed[i] = map[int64]time.Time{}
	}
	return m
}

// window returns the index of the window event time t falls in.
func (m *windowMarks) window(t time.Time) int64 {
	return int64(t.Sub(m.cfg.Start) / ysb.WindowSize)
}

// wrap returns the source factory with its records' generation observed.
func (m *windowMarks) wrap(f sdk.Factory) sdk.Factory {
	if !m.latency {
		return observe(f, &m.first, nil)
	}
	return observe(f, &m.first, func(i int64, rec sdk.Record) {
		inst := int(i % int64(len(m.passed)))
		w := m.window(rec.EventTime)
		m.mu.Lock()
		defer m.mu.Unlock()
		// An instance's event times only grow: the windows before w
		// whose ends it had not passed are passed now.
		for k := w - 1; k >= 0; k-- {
			if _, ok := m.passed[inst][k]; ok {
				break
			}
			m.passed[inst][k] = time.Now()
		}
	})
}

// latencies returns, for each window count at the sink whose window's end
// every source instance passed, the time from the last of them passing it
// to the count's arrival.
func (m *windowMarks) latencies(s *ysbSink, cfg ysb.Config) []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for k, at := range s.at {
		w := m.window(time.UnixMilli(k.Start))
		var passed time.Time
		for _, p := range m.passed {
			t, ok := p[w]
			if !ok {
				passed = time.Time{}
				break
			}
			if t.After(passed) {
				passed = t
			}
		}
		if !passed.IsZero() {
			out = append(out, at.Sub(passed))
		}
	}
	return out
}

// firstEvent keeps the wall and process CPU time of a run's first event.
type firstEvent struct {
	once sync.Once
	at   time.Time
	cpu  time.Duration
}

// mark records now, the first time it is called.
func (f *firstEvent) mark() {
	f.once.Do(func() { f.at, f.cpu = time.Now(), processCPU() })
}

// get returns the times mark recorded (an error if it never ran: the
// source was not the generator the run observes).
func (f *firstEvent) get() (time.Time, time.Duration, error) {
	f.once.Do(func() {})
	if f.at.IsZero() {
		return time.Time{}, 0, fmt.Errorf("bench: the source generated no observed event (not a generate.Source)")
	}
	return f.at, f.cpu, nil
}

// observe returns the generator source factory f with each record it
// makes passed to see (after the run's first event is marked in first).
func observe(f sdk.Factory, first *firstEvent, see func(i int64, rec sdk.Record)) sdk.Factory {
	return func() sdk.Operator {
		op := f()
		src, ok := op.(*generate.Source)
		if !ok {
			return op // nothing observed: firstEvent.get says so
		}
		orig := src.Make
		src.Make = func(i int64, rng *rand.Rand) sdk.Record {
			rec := orig(i, rng)
			first.mark()
			if see != nil {
				see(i, rec)
			}
			return rec
		}
		return src
	}
}
