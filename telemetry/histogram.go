package telemetry

import (
	"math"
	"slices"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// buckets are a histogram's explicit bucket boundaries: upper bounds,
// inclusive, as OpenTelemetry defines them.
type buckets struct {
	nanos   []time.Duration // for recording
	seconds []float64       // for export (the unit is s)
}

func newBuckets(seconds ...float64) buckets {
	b := buckets{seconds: seconds}
	for _, s := range seconds {
		b.nanos = append(b.nanos, time.Duration(math.Round(s*float64(time.Second))))
	}
	return b
}

// histogram is a cumulative explicit-bucket histogram of durations,
// updated with atomics: recording neither locks nor allocates. Sluice
// aggregates its two latency histograms itself, rather than through the
// OpenTelemetry SDK's synchronous instruments, because those cost about
// 300 ns a measurement (attribute normalisation, a lock), ~8 % of a busy
// word count's CPU; the aggregate reaches the readers through
// metrics.Produce (an sdkmetric.Producer).
type histogram struct {
	b      *buckets
	counts []atomic.Uint64 // len(b.nanos)+1; the last is +Inf
	sum    atomic.Int64    // ns
	start  time.Time
}

func newHistogram(b *buckets, start time.Time) *histogram {
	return &histogram{b: b, counts: make([]atomic.Uint64, len(b.nanos)+1), start: start}
}

// record adds one duration. Safe for concurrent use.
func (h *histogram) record(d time.Duration) {
	i, _ := slices.BinarySearch(h.b.nanos, d) // first bound ≥ d
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// point returns the histogram as a data point, or false while it is empty.
func (h *histogram) point(attrs attribute.Set, now time.Time) (metricdata.HistogramDataPoint[float64], bool) {
	counts := make([]uint64, len(h.counts))
	var n uint64
	for i := range h.counts {
		counts[i] = h.counts[i].Load()
		n += counts[i]
	}
	if n == 0 {
		return metricdata.HistogramDataPoint[float64]{}, false
	}
	return metricdata.HistogramDataPoint[float64]{
		Attributes:   attrs,
		StartTime:    h.start,
		Time:         now,
		Count:        n,
		Bounds:       h.b.seconds,
		BucketCounts: counts,
		Sum:          time.Duration(h.sum.Load()).Seconds(),
	}, true
}
