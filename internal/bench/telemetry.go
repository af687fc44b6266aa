package bench

import (
	"context"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/telemetry"
)

// TelemetryOn returns the telemetry of the "telemetry on" word count:
// sources sample 1 record in 1000, and every metric (Go runtime and
// process ones included) is collected each second, a pessimistic interval
// (the OTLP default is 60 s). Spans and metrics go to exporters that drop
// them, so that what is measured is Sluice's instrumentation, not a
// network.
func TelemetryOn() *node.TelemetryConfig {
	tc := telemetry.DefaultConfig()
	tc.Sampling = telemetry.Sampling{Every: 1000}
	tc.SpanExporter = tracetest.NewNoopExporter()
	tc.MetricExporter, tc.MetricInterval = discardMetrics{}, time.Second
	return &tc
}

// discardMetrics is a metric exporter that drops what it is given.
type discardMetrics struct{}

var _ sdkmetric.Exporter = discardMetrics{}

func (discardMetrics) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (discardMetrics) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (discardMetrics) Export(context.Context, *metricdata.ResourceMetrics) error { return nil }
func (discardMetrics) ForceFlush(context.Context) error                          { return nil }
func (discardMetrics) Shutdown(context.Context) error                            { return nil }
