package telemetry

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sluicehq/sluice/actors/status"
)

// Checkpoint metrics, recorded on the node that coordinates checkpoints
// (exactly-once; see docs/observability.md).
const (
	// MetricCheckpoints counts checkpoints by outcome (AttrOutcome:
	// "completed" or "failed"); counter, {checkpoint}.
	MetricCheckpoints = "sluice.checkpoint.count"
	// MetricCheckpointDuration is how long complete checkpoints took;
	// histogram, s.
	MetricCheckpointDuration = "sluice.checkpoint.duration"
	// MetricCheckpointUploaded counts the bytes complete checkpoints sent
	// to the store; counter, By.
	MetricCheckpointUploaded = "sluice.checkpoint.uploaded"
	// MetricCheckpointSize is the size of everything the newest complete
	// checkpoint references; gauge, By.
	MetricCheckpointSize = "sluice.checkpoint.size"
	// MetricCheckpointAge is the time since the newest checkpoint this node
	// completed; gauge, s (absent before the first).
	MetricCheckpointAge = "sluice.checkpoint.age"
)

// AttrOutcome is a checkpoint's outcome in MetricCheckpoints.
const AttrOutcome = attribute.Key("sluice.checkpoint.outcome")

// checkpointBuckets bound the checkpoint duration histogram, in seconds.
var checkpointBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// ckMetrics are the checkpoint instruments.
type ckMetrics struct {
	count    metric.Int64Counter
	duration metric.Float64Histogram
	uploaded metric.Int64Counter
	size     metric.Int64ObservableGauge
	age      metric.Float64ObservableGauge

	completed, failed metric.MeasurementOption
	lastSize          atomic.Int64
	lastAt            atomic.Int64 // unix nanoseconds of the newest completion; 0: none
}

// register creates the checkpoint instruments on meter.
func (c *ckMetrics) register(meter metric.Meter) error {
	var errs [5]error
	c.count, errs[0] = meter.Int64Counter(MetricCheckpoints, metric.WithUnit("{checkpoint}"),
		metric.WithDescription("Checkpoints this node coordinated, by outcome."))
	c.duration, errs[1] = meter.Float64Histogram(MetricCheckpointDuration, metric.WithUnit("s"),
		metric.WithDescription("Time complete checkpoints took."), metric.WithExplicitBucketBoundaries(checkpointBuckets...))
	c.uploaded, errs[2] = meter.Int64Counter(MetricCheckpointUploaded, metric.WithUnit("By"),
		metric.WithDescription("Bytes complete checkpoints sent to the store."))
	c.size, errs[3] = meter.Int64ObservableGauge(MetricCheckpointSize, metric.WithUnit("By"),
		metric.WithDescription("Size of everything the newest complete checkpoint references."))
	c.age, errs[4] = meter.Float64ObservableGauge(MetricCheckpointAge, metric.WithUnit("s"),
		metric.WithDescription("Time since the newest checkpoint this node completed."))
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("telemetry: create checkpoint instruments: %w", err)
		}
	}
	c.completed = metric.WithAttributeSet(attribute.NewSet(AttrOutcome.String("completed")))
	c.failed = metric.WithAttributeSet(attribute.NewSet(AttrOutcome.String("failed")))
	if _, err := meter.RegisterCallback(c.observe, c.size, c.age); err != nil {
		return fmt.Errorf("telemetry: register checkpoint callback: %w", err)
	}
	return nil
}

// observe reports the gauges once a checkpoint completed.
func (c *ckMetrics) observe(_ context.Context, o metric.Observer) error {
	at := c.lastAt.Load()
	if at == 0 {
		return nil
	}
	o.ObserveInt64(c.size, c.lastSize.Load())
	o.ObserveFloat64(c.age, time.Since(time.Unix(0, at)).Seconds())
	return nil
}

// checkpointed records one checkpoint.
func (c *ckMetrics) checkpointed(took time.Duration, uploaded, size int64, err error) {
	ctx := context.Background()
	if err != nil {
		c.count.Add(ctx, 1, c.failed)
		return
	}
	c.count.Add(ctx, 1, c.completed)
	c.duration.Record(ctx, took.Seconds())
	c.uploaded.Add(ctx, uploaded)
	c.lastSize.Store(size)
	c.lastAt.Store(time.Now().UnixNano())
}

var _ status.CheckpointObserver = (*observer)(nil)

// Checkpointed implements status.CheckpointObserver.
func (o *observer) Checkpointed(_ uint64, took time.Duration, uploaded, size int64, err error) {
	if o.metrics != nil {
		o.metrics.ck.checkpointed(took, uploaded, size, err)
	}
}
