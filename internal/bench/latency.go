package bench

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/actors/status"
)

// latencyFractions are the loads of the latency rows, as fractions of the
// keyed word count's saturated throughput.
var latencyFractions = []float64{0.10, 0.50, 0.90}

// latencyRows measures the keyed word count's end-to-end latency (p50,
// p99, p99.9) with the source paced at 10, 50 and 90 % of its saturated
// throughput (the core group's median, or one saturated run of its own),
// each run lasting cfg.LatencyDuration (default 3 s). Then, at 10 and
// 90 %, one run more with metrics on gives the runtime's own latency
// breakdown per operator (Breakdown): those runs pay for the metrics, so
// their figures are for the shares, not for the targets.
func (t *tabler) latencyRows() ([]row, error) {
	cfg := t.cfg
	dur := cfg.LatencyDuration
	if dur <= 0 {
		dur = 3 * time.Second
	}
	if t.saturated == 0 {
		r, err := t.once("sluice keyed word count, saturated (for pacing)", 0, t.cfg.Runs, func() (Result, error) {
			return WordCount(WordCountConfig{Records: cfg.Records, Keys: 10_000, NoLatencies: true})
		})
		fmt.Fprintln(t.w)
		if err != nil {
			return nil, err
		}
		t.saturated = r.PerSec()
	}
	var rows []row
	for _, f := range latencyFractions {
		rate := f * t.saturated
		n := max(int(rate*dur.Seconds()), 1_000)
		rs, err := t.measure(fmt.Sprintf("word count at %.0f%% (%s/s)", f*100, human(rate)), func() (Result, error) {
			return WordCount(WordCountConfig{Records: n, Keys: 10_000, Rate: rate})
		})
		if err != nil {
			return nil, err
		}
		rows = append(rows, row{fmt.Sprintf("  e2e latency p50 / p99 / p99.9 at %.0f%% of saturation", f*100),
			fmt.Sprintf("%s / %s / %s", fmtDur(medianPct(rs, 50)), fmtDur(medianPct(rs, 99)), fmtDur(medianPct(rs, 99.9))), "",
			"", fmt.Sprintf("%s records/s paced (%s saturated), %v runs; measured, no target (the p99 ≤ 1 ms target is at 100k records/s)", human(rate), human(t.saturated), dur)})
	}
	for _, f := range []float64{0.10, 0.90} {
		rate := f * t.saturated
		n := max(int(rate*dur.Seconds()), 1_000)
		b := &Breakdown{}
		name := fmt.Sprintf("word count at %.0f%%, latency breakdown", f*100)
		r, err := t.once(name, 0, t.cfg.Runs, func() (Result, error) {
			return WordCount(WordCountConfig{Records: n, Keys: 10_000, Rate: rate, Telemetry: BreakdownTelemetry(b)})
		})
		fmt.Fprintln(t.w)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row{fmt.Sprintf("  breakdown at %.0f%%, metrics on: sink e2e p50 / p99 / p99.9", f*100),
			fmt.Sprintf("%s / %s / %s", fmtDur(r.Percentile(50)), fmtDur(r.Percentile(99)), fmtDur(r.Percentile(99.9))), "", "",
			fmt.Sprintf("one run; per operator below, p50/p99/p99.9 from the runtime's histograms (bucket bounds, records sampled 1 in %d)", status.ProcessedSampleEvery)})
		for _, op := range b.Operators() {
			rows = append(rows, row{"    " + op, "", "", "", b.Line(op)})
		}
	}
	return rows, nil
}
