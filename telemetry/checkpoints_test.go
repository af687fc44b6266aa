package telemetry

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluicehq/sluice/actors/status"
)

func TestCheckpointMetrics(t *testing.T) {
	exp := &captureMetrics{}
	tel := newTest(t, Config{MetricExporter: exp, MetricInterval: time.Hour})
	obs, ok := tel.Observer().(status.CheckpointObserver)
	if !ok {
		t.Fatal("the observer is no status.CheckpointObserver")
	}
	obs.Checkpointed(1, 200*time.Millisecond, 1000, 5000, nil)
	obs.Checkpointed(2, time.Second, 0, 0, errors.New("store unreachable"))
	obs.Checkpointed(3, 300*time.Millisecond, 500, 5200, nil)
	if err := tel.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Metrics{}
	for _, sm := range exp.get().ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	outcomes := map[string]int64{}
	for _, p := range sumPoints(got[MetricCheckpoints]) {
		v, _ := p.Attributes.Value(AttrOutcome)
		outcomes[v.AsString()] = p.Value
	}
	if outcomes["completed"] != 2 || outcomes["failed"] != 1 {
		t.Errorf("%s: %v, want 2 completed and 1 failed", MetricCheckpoints, outcomes)
	}
	if p := sumPoints(got[MetricCheckpointUploaded]); len(p) != 1 || p[0].Value != 1500 {
		t.Errorf("%s: %v, want 1500", MetricCheckpointUploaded, p)
	}
	if h, ok := got[MetricCheckpointDuration].Data.(metricdata.Histogram[float64]); !ok || len(h.DataPoints) != 1 || h.DataPoints[0].Count != 2 {
		t.Errorf("%s: %+v, want 2 durations", MetricCheckpointDuration, got[MetricCheckpointDuration].Data)
	}
	if g, ok := got[MetricCheckpointSize].Data.(metricdata.Gauge[int64]); !ok || len(g.DataPoints) != 1 || g.DataPoints[0].Value != 5200 {
		t.Errorf("%s: %+v, want 5200", MetricCheckpointSize, got[MetricCheckpointSize].Data)
	}
	if g, ok := got[MetricCheckpointAge].Data.(metricdata.Gauge[float64]); !ok || len(g.DataPoints) != 1 || g.DataPoints[0].Value < 0 || g.DataPoints[0].Value > 60 {
		t.Errorf("%s: %+v, want a few seconds", MetricCheckpointAge, got[MetricCheckpointAge].Data)
	}
}
