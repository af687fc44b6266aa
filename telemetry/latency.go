package telemetry

import "time"

// Latency is one instance's latency quantiles on this node, estimated
// from its histograms over the records the runtime timed (a sample) since
// the instance first timed one here. A quantile is the upper bound of the
// bucket that holds it (the largest bound when it lies beyond them all).
type Latency struct {
	Operator string
	Index    int
	// Timed counts the records the quantiles are taken from.
	Timed                    uint64
	ProcessP50, ProcessP99   time.Duration
	EndToEndP50, EndToEndP99 time.Duration // 0 when no record carried an event time
}

// Latencies returns the latency quantiles of every instance that timed a
// record on this node; nil when metrics are off.
func (t *Telemetry) Latencies() []Latency {
	if t.metrics == nil {
		return nil
	}
	var out []Latency
	for _, in := range t.metrics.instances.all() {
		op, _ := in.attrs.Value(AttrOperator)
		idx, _ := in.attrs.Value(AttrInstance)
		l := Latency{Operator: op.AsString(), Index: int(idx.AsInt64())}
		l.Timed, l.ProcessP50, l.ProcessP99 = in.process.quantiles()
		if l.Timed == 0 {
			continue
		}
		_, l.EndToEndP50, l.EndToEndP99 = in.endToEnd.quantiles()
		out = append(out, l)
	}
	return out
}

// quantiles returns the number of durations recorded and their p50 and
// p99 bucket bounds.
func (h *histogram) quantiles() (n uint64, p50, p99 time.Duration) {
	counts := make([]uint64, len(h.counts))
	for i := range h.counts {
		counts[i] = h.counts[i].Load()
		n += counts[i]
	}
	if n == 0 {
		return 0, 0, 0
	}
	at := func(q float64) time.Duration {
		want := uint64(q*float64(n) + 0.999999) // the rank of the quantile, 1-based
		var cum uint64
		for i, c := range counts {
			cum += c
			if cum >= want {
				return h.b.nanos[min(i, len(h.b.nanos)-1)]
			}
		}
		return h.b.nanos[len(h.b.nanos)-1]
	}
	return n, at(0.5), at(0.99)
}
