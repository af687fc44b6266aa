package bench

import (
	"fmt"
	"time"
)

// eoRows compares the keyed word count exactly-once (aligned checkpoints
// every 1 s to a directory store) with no guarantee. Runs alternate, so
// that drift on a shared machine affects both alike, and are long
// (cfg.EORecords, default 10 M records: several seconds, several
// checkpoints each) so that a checkpoint's cost is averaged over many
// rather than hit or missed by a short run. The ratio is the median of
// the ratios of each pair of neighbouring runs, steadier than the ratio
// of the medians when the machine's load drifts; the spread of the pairs'
// ratios is in the note.
func (t *tabler) eoRows() ([]row, error) {
	n := t.cfg.EORecords
	if n <= 0 {
		n = 10_000_000
	}
	none, eo, err := t.alternate([2]string{"word count, no guarantee", "word count, exactly-once"}, t.cfg.Runs, false, func(exactly bool) (Result, error) {
		return WordCount(WordCountConfig{Records: n, Keys: 10_000, ExactlyOnce: exactly, NoLatencies: true})
	}, func(r Result) string {
		if r.Checkpoints == nil {
			return fmt.Sprintf(" (%.1f s)", r.Elapsed.Seconds())
		}
		return fmt.Sprintf(" (%.1f s), %d checkpoints", r.Elapsed.Seconds(), len(r.Checkpoints))
	})
	if err != nil {
		return nil, err
	}
	ratios := make([]float64, len(eo))
	lo, hi := 0.0, 0.0
	for i := range eo {
		ratios[i] = eo[i].PerSec() / none[i].PerSec()
		if i == 0 || ratios[i] < lo {
			lo = ratios[i]
		}
		if i == 0 || ratios[i] > hi {
			hi = ratios[i]
		}
	}
	noneRate, eoRate := medianRate(none), medianRate(eo)
	var secs []float64
	for _, r := range eo {
		secs = append(secs, r.Elapsed.Seconds())
	}
	rows := []row{
		{"sluice keyed word count, no guarantee (baseline)", human(noneRate), "records/s", "1.00×",
			fmt.Sprintf("%s records a run (%.0f s exactly-once), runs alternate with the next row", human(float64(n)), Median(secs))},
		{"sluice keyed word count, exactly-once", human(eoRate), "records/s", fmt.Sprintf("%.2f×", Median(ratios)),
			fmt.Sprintf("median of pairs' ratios (%.2f–%.2f); checkpoints every 1 s to a directory store; target ≥ 0.90× (Kafka Streams: 0.70–0.85×)", lo, hi)},
	}
	return append(rows, checkpointRows(eo)...), nil
}

// checkpointRows describes the checkpoints of runs: their duration's p50
// and p99, and the median of each phase.
func checkpointRows(rs []Result) []row {
	var ck []time.Duration
	var phases []CheckpointPhases
	for _, r := range rs {
		ck = append(ck, r.Checkpoints...)
		phases = append(phases, r.CheckpointPhases...)
	}
	if len(ck) == 0 {
		return nil
	}
	c := Result{Latencies: ck}
	rows := []row{{"  checkpoint duration p50 / p99", fmt.Sprintf("%v / %v", c.Percentile(50).Round(time.Millisecond), c.Percentile(99).Round(time.Millisecond)), "",
		"", fmt.Sprintf("%d checkpoints over the runs, trigger to every part acknowledged at the coordinator", len(ck))}}
	if note := phasesNote(phases); note != "" {
		rows = append(rows, row{"  checkpoint phases", "", "", "", note})
	}
	return rows
}
