package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/telemetry"
)

// Breakdown is where records' latency went in a run, per operator, from
// the runtime's own histograms (package telemetry): the time from event
// to the batch being sent to the operator, queue wait, processing, end to
// end, and state commits. Its figures are bucket upper bounds.
type Breakdown struct {
	mu   sync.Mutex
	hist map[string]map[string]*bucketCounts // metric → operator → histogram
}

// bucketCounts is an explicit-bucket histogram merged over instances.
type bucketCounts struct {
	bounds []float64 // s
	counts []uint64  // len(bounds)+1
}

// BreakdownTelemetry returns the telemetry of a run whose breakdown b
// collects: metrics only (no traces, no runtime metrics), exported to b
// every second and when the runtime stops.
func BreakdownTelemetry(b *Breakdown) *node.TelemetryConfig {
	return &node.TelemetryConfig{MetricExporter: b, MetricInterval: time.Second}
}

var _ sdkmetric.Exporter = (*Breakdown)(nil)

// Temporality implements sdkmetric.Exporter.
func (b *Breakdown) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

// Aggregation implements sdkmetric.Exporter.
func (b *Breakdown) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

// Export keeps the latest cumulative histograms (copied: the SDK reuses
// what it passes).
func (b *Breakdown) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	hist := map[string]map[string]*bucketCounts{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok {
				continue
			}
			byOp := map[string]*bucketCounts{}
			for _, dp := range h.DataPoints {
				v, _ := dp.Attributes.Value(telemetry.AttrOperator)
				op := v.AsString()
				bc := byOp[op]
				if bc == nil {
					bc = &bucketCounts{bounds: append([]float64(nil), dp.Bounds...), counts: make([]uint64, len(dp.BucketCounts))}
					byOp[op] = bc
				}
				for i, c := range dp.BucketCounts {
					if i < len(bc.counts) {
						bc.counts[i] += c
					}
				}
			}
			hist[m.Name] = byOp
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hist == nil {
		b.hist = map[string]map[string]*bucketCounts{}
	}
	for name, byOp := range hist {
		b.hist[name] = byOp
	}
	return nil
}

// ForceFlush implements sdkmetric.Exporter.
func (b *Breakdown) ForceFlush(context.Context) error { return nil }

// Shutdown implements sdkmetric.Exporter.
func (b *Breakdown) Shutdown(context.Context) error { return nil }

// quantile returns the upper bound of the bucket holding quantile q (0–1)
// of operator op's histogram metric, and the number of samples; +Inf
// beyond the last bound.
func (b *Breakdown) quantile(metric, op string, q float64) (time.Duration, uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bc := b.hist[metric][op]
	if bc == nil {
		return 0, 0
	}
	var n uint64
	for _, c := range bc.counts {
		n += c
	}
	if n == 0 {
		return 0, 0
	}
	rank := uint64(q*float64(n-1)) + 1
	var cum uint64
	for i, c := range bc.counts {
		if cum += c; cum >= rank {
			if i >= len(bc.bounds) {
				return -1, n // beyond the last bound
			}
			return time.Duration(bc.bounds[i] * float64(time.Second)), n
		}
	}
	return -1, n
}

// Operators returns the operators with timed records, sorted.
func (b *Breakdown) Operators() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ops []string
	for op := range b.hist[telemetry.MetricProcessDuration] {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	return ops
}

// breakdownStages are the breakdown's columns: metric and label.
var breakdownStages = []struct{ metric, label string }{
	{telemetry.MetricSentDuration, "sent"},
	{telemetry.MetricQueueDuration, "queue"},
	{telemetry.MetricProcessDuration, "process"},
	{telemetry.MetricEndToEnd, "e2e"},
	{telemetry.MetricCommitDuration, "commit"},
}

// Line returns op's breakdown: p50/p99/p99.9 of each stage ("≤" a bucket
// bound; "-" without samples).
func (b *Breakdown) Line(op string) string {
	var parts []string
	for _, s := range breakdownStages {
		var qs []string
		for _, q := range []float64{0.50, 0.99, 0.999} {
			d, n := b.quantile(s.metric, op, q)
			switch {
			case n == 0:
				qs = append(qs, "-")
			case d < 0:
				qs = append(qs, ">max")
			default:
				qs = append(qs, fmtDur(d))
			}
		}
		parts = append(parts, s.label+" "+strings.Join(qs, "/"))
	}
	return strings.Join(parts, ", ")
}

// fmtDur formats a duration briefly (µs below 1 ms).
func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Round(time.Microsecond).Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1e3)
	}
	return d.Round(time.Millisecond).String()
}
