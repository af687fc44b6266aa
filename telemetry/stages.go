package telemetry

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluicehq/sluice/actors/status"
)

// Metric names of the latency breakdown (status.StageObserver): where a
// record's end-to-end time goes besides ProcessRecord.
const (
	// MetricSentDuration is the time from a record's event time to its
	// batch leaving the producer that sent it to the operator, for the
	// records MetricProcessDuration times; histogram, s.
	MetricSentDuration = "sluice.operator.sent.duration"
	// MetricQueueDuration is the time from a batch leaving its producer to
	// the record's processing starting (transport, mailbox, records ahead
	// in the batch), for the same records; histogram, s.
	MetricQueueDuration = "sluice.operator.queue.duration"
	// MetricCommitDuration is the time each periodic state commit of an
	// instance took (it processes nothing meanwhile); histogram, s.
	MetricCommitDuration = "sluice.operator.commit.duration"
)

var _ status.StageObserver = (*observer)(nil)

// stageMetrics names and describes each stage's histogram, by status.Stage.
var stageMetrics = [...]struct{ name, desc string }{
	status.StageSent:   {MetricSentDuration, sampleNote("Time from a record's event time to its batch leaving the producer that sent it here")},
	status.StageQueue:  {MetricQueueDuration, sampleNote("Time from a batch leaving its producer to the record's processing starting")},
	status.StageCommit: {MetricCommitDuration, "Time each periodic state commit of the instance took."},
}

// sampleNote returns the description of a histogram of sampled records.
func sampleNote(what string) string {
	return fmt.Sprintf("%s, for one record in %d and the first of each batch of fewer than %d.", what, status.ProcessedSampleEvery, status.ProcessedSampleEvery/4)
}

// Stage implements status.StageObserver.
func (o *observer) Stage(operator string, index int, stage status.Stage, d time.Duration) {
	if o.metrics == nil || int(stage) >= len(stageMetrics) {
		return
	}
	o.metrics.instances.get(operator, index).stages[stage].record(d)
}

// newStageHistograms returns an instance's stage histograms.
func newStageHistograms(now time.Time) [len(stageMetrics)]*histogram {
	var hs [len(stageMetrics)]*histogram
	for i := range hs {
		hs[i] = newHistogram(&processBuckets, now)
	}
	return hs
}

// stagesProduced returns the stage histograms of every instance, for
// metrics.Produce.
func (m *metrics) stagesProduced(now time.Time) []metricdata.Metrics {
	var out []metricdata.Metrics
	for s, sm := range stageMetrics {
		h := metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality}
		for _, in := range m.instances.all() {
			if p, ok := in.stages[s].point(in.attrs, now); ok {
				h.DataPoints = append(h.DataPoints, p)
			}
		}
		if len(h.DataPoints) > 0 {
			out = append(out, metricdata.Metrics{Name: sm.name, Unit: "s", Description: sm.desc, Data: h})
		}
	}
	return out
}
