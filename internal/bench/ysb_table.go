package bench

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/sluicehq/sluice/samples/ysb"
)

// errWrongOutput marks a run whose output differs from the expected
// answer: its row says so instead of printing a figure.
var errWrongOutput = errors.New("wrong output")

// flinkQ5PerCore is Flink 1.13's published Nexmark q5 throughput per core
// (nexmark/nexmark README: ~22 k events/s per core).
const flinkQ5PerCore = 22_000

// ysbRows: the Yahoo Streaming Benchmark (samples/ysb) unthrottled over a
// bounded stream, exactly-once (checkpoints every 1 s) and with no
// guarantee, alternating; its window latency with the source paced; the
// cost of its JSON decoding per event; and Nexmark queries 5 and 8's
// events/s per core. Every run's output is checked against the sample's
// expected answer; a wrong one gives a row saying so rather than a figure.
func (t *tabler) ysbRows() ([]row, error) {
	cfg := t.cfg
	n := cfg.YSBEvents
	if n <= 0 {
		n = 5_000_000
	}
	var rows []row
	none, eo, err := t.alternate([2]string{"YSB, no guarantee", "YSB, exactly-once"}, cfg.Runs, false, func(exactly bool) (Result, error) {
		r, err := YSB(YSBConfig{Events: n, ExactlyOnce: exactly})
		return r.Result, err
	}, func(r Result) string { return fmt.Sprintf(" (%.1f s)", r.Elapsed.Seconds()) })
	switch {
	case errors.Is(err, errWrongOutput):
		rows = append(rows, row{"YSB events/s", "WRONG OUTPUT", "", "", err.Error()})
	case err != nil:
		return nil, err
	default:
		noneRate, eoRate := medianRate(none), medianRate(eo)
		rows = append(rows,
			row{"YSB, no guarantee (baseline)", human(noneRate), "events/s", "1.00×",
				fmt.Sprintf("%s JSON events, parallelism 2, unthrottled; output = ysb.Expected; runs alternate with the next row", human(float64(n)))},
			row{"YSB, exactly-once", human(eoRate), "events/s", fmt.Sprintf("%.2f×", eoRate/noneRate),
				fmt.Sprintf("checkpoints every 1 s; first event generated to sink finished; output = ysb.Expected; target ≥ 1 M events/s on %d cores", runtime.NumCPU())})
		if ns := decodeNs(); ns > 0 {
			cpu := cpuPerOp(eo)
			rows = append(rows, row{"  YSB JSON decode (ysb.Fields)", fmt.Sprintf("%.0f", ns), "ns/event",
				"", fmt.Sprintf("BenchmarkDecode's scanner in this process; %.0f%% of the exactly-once run's %.0f ns CPU per event", 100*ns/cpu, cpu)})
		}
	}
	lrows, err := t.ysbLatencyRows()
	if err != nil {
		return nil, err
	}
	rows = append(rows, lrows...)
	for _, query := range []func() ([]row, error){t.q5Rows, t.q8Rows} {
		qrows, err := query()
		if err != nil {
			return nil, err
		}
		rows = append(rows, qrows...)
	}
	return rows, nil
}

// ysbLatencyRows: YSB's window latency with the source paced at
// cfg.YSBRate (default 200 k events/s) for cfg.LatencyDuration (default
// 5 s), exactly-once.
func (t *tabler) ysbLatencyRows() ([]row, error) {
	rate := t.cfg.YSBRate
	if rate <= 0 {
		rate = 200_000
	}
	dur := t.cfg.LatencyDuration
	if dur <= 0 {
		dur = 5 * time.Second
	}
	events := max(int64(rate*dur.Seconds()), 1_000)
	windows := 0
	rs, err := t.measure(fmt.Sprintf("YSB window latency at %s events/s", human(rate)), func() (Result, error) {
		r, err := YSB(YSBConfig{Events: events, Rate: rate, ExactlyOnce: true, Latency: true})
		windows += len(r.Latencies)
		return r.Result, err
	})
	switch {
	case errors.Is(err, errWrongOutput):
		return []row{{"YSB window latency p50 / p99", "WRONG OUTPUT", "", "", err.Error()}}, nil
	case err != nil:
		return nil, err
	}
	return []row{{"  YSB window latency p50 / p99", fmt.Sprintf("%s / %s", fmtDur(medianPct(rs, 50)), fmtDur(medianPct(rs, 99))), "", "",
		fmt.Sprintf("exactly-once, paced at %s events/s (%s events, 10 s windows of event time every %.1f s of wall time); %d window counts: "+
			"from the watermark passing a window's end at every source instance to its count at the sink; target p99 ≤ 500 ms",
			human(rate), human(float64(events)), float64(ysb.WindowSize/time.Second)*10_000/rate, windows)}}, nil
}

// q5Rows: Nexmark query 5 unthrottled, exactly-once, per core.
func (t *tabler) q5Rows() ([]row, error) {
	n := t.cfg.Q5Events
	if n <= 0 {
		n = 1_000_000
	}
	rs, err := t.measure("Nexmark q5, exactly-once", func() (Result, error) { return Q5(NexmarkConfig{Events: n, ExactlyOnce: true}) })
	switch {
	case errors.Is(err, errWrongOutput):
		return []row{{"Nexmark q5 events/s", "WRONG OUTPUT", "", "", err.Error()}}, nil
	case err != nil:
		return nil, err
	}
	rate := medianRate(rs)
	procs := runtime.GOMAXPROCS(0)
	perCore := rate / float64(procs)
	perCPU := 1e9 / cpuPerOp(rs)
	return []row{
		{"Nexmark q5, exactly-once", human(rate), "events/s", "",
			fmt.Sprintf("%s events, parallelism 2, unthrottled, checkpoints every 1 s; output = nexmark.Q5Expected", human(float64(n)))},
		{"  Nexmark q5 per core", human(perCore), "events/s/core", fmt.Sprintf("%.1f×", perCore/flinkQ5PerCore),
			fmt.Sprintf("events/s ÷ GOMAXPROCS (%d); per CPU-second actually used: %s (%.1f×); ratio to Flink 1.13's ~22 k/core; target ≥ 10×",
				procs, human(perCPU), perCPU/flinkQ5PerCore)},
	}, nil
}

// q8Rows: Nexmark query 8 unthrottled, exactly-once, per core.
func (t *tabler) q8Rows() ([]row, error) {
	n := t.cfg.Q8Events
	if n <= 0 {
		n = 1_000_000
	}
	rs, err := t.measure("Nexmark q8, exactly-once", func() (Result, error) { return Q8(NexmarkConfig{Events: n, ExactlyOnce: true}) })
	switch {
	case errors.Is(err, errWrongOutput):
		return []row{{"Nexmark q8 events/s", "WRONG OUTPUT", "", "", err.Error()}}, nil
	case err != nil:
		return nil, err
	}
	rate := medianRate(rs)
	procs := runtime.GOMAXPROCS(0)
	return []row{{"Nexmark q8, exactly-once", human(rate), "events/s", "",
		fmt.Sprintf("%s events, parallelism 2, unthrottled, checkpoints every 1 s; output = nexmark.Q8Expected; %s events/s per core (÷ GOMAXPROCS %d), %s per CPU-second used",
			human(float64(n)), human(rate/float64(procs)), procs, human(1e9/cpuPerOp(rs)))}}, nil
}

// cpuPerOp returns the median over the runs of the process's CPU time per
// event, in ns.
func cpuPerOp(rs []Result) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = float64(r.CPU) / float64(max(r.Ops, 1))
	}
	return Median(xs)
}

// decodeNs returns ysb.Fields' cost per event (as BenchmarkDecode's
// scanner measures it), in ns; 0 if an event fails to decode.
func decodeNs() float64 {
	gen := ysb.Config{Events: 1000}.Generator()
	var events [][]byte
	for i := range int64(1000) {
		events = append(events, gen.Event(i).AppendJSON(nil))
	}
	failed := false
	r := testing.Benchmark(func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, _, err := ysb.Fields(events[i%len(events)]); err != nil {
				failed = true
				b.FailNow()
			}
		}
	})
	if failed || r.N == 0 {
		return 0
	}
	return float64(r.T.Nanoseconds()) / float64(r.N)
}
