package telemetry

import (
	"testing"
	"time"
)

func TestHistogramQuantiles(t *testing.T) {
	h := newHistogram(&processBuckets, time.Now())
	if n, p50, p99 := h.quantiles(); n != 0 || p50 != 0 || p99 != 0 {
		t.Fatalf("empty histogram: %d %v %v", n, p50, p99)
	}
	for range 98 {
		h.record(3 * time.Microsecond) // bucket ≤ 5 µs
	}
	h.record(2 * time.Millisecond)  // ≤ 2.5 ms
	h.record(20 * time.Millisecond) // ≤ 25 ms
	n, p50, p99 := h.quantiles()
	if n != 100 || p50 != 5*time.Microsecond || p99 != 2500*time.Microsecond {
		t.Fatalf("quantiles of 98×3µs, 2ms, 20ms: n=%d p50=%v p99=%v, want 100, 5µs, 2.5ms", n, p50, p99)
	}
	h.record(time.Minute) // beyond every bound
	h.record(time.Minute)
	if _, _, p99 := h.quantiles(); p99 != 10*time.Second {
		t.Fatalf("p99 beyond the bounds = %v, want the largest bound 10s", p99)
	}
}

func TestLatenciesOfTimedInstances(t *testing.T) {
	m := newMetrics()
	m.processed("count", 2, time.Millisecond, 30*time.Millisecond)
	tel := &Telemetry{metrics: m}
	ls := tel.Latencies()
	if len(ls) != 1 || ls[0].Operator != "count" || ls[0].Index != 2 || ls[0].Timed != 1 ||
		ls[0].ProcessP50 != time.Millisecond || ls[0].EndToEndP99 != 50*time.Millisecond {
		t.Fatalf("latencies = %+v", ls)
	}
	if (&Telemetry{}).Latencies() != nil {
		t.Fatal("latencies without metrics")
	}
}
