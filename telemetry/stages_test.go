package telemetry

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluicehq/sluice/actors/status"
)

func TestStageHistograms(t *testing.T) {
	exp := &captureMetrics{}
	tel := newTest(t, Config{MetricExporter: exp, MetricInterval: time.Hour})
	so, ok := tel.Observer().(status.StageObserver)
	if !ok {
		t.Fatal("the observer is not an status.StageObserver")
	}
	so.Stage("count", 1, status.StageQueue, 2*time.Millisecond)
	so.Stage("count", 1, status.StageQueue, 4*time.Millisecond)
	so.Stage("count", 1, status.StageSent, time.Millisecond)
	so.Stage("count", 1, status.StageCommit, 20*time.Millisecond)
	so.Stage("count", 1, status.Stage(99), time.Second) // unknown: ignored
	if err := tel.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.HistogramDataPoint[float64]{}
	for _, sm := range exp.get().ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && len(h.DataPoints) == 1 {
				got[m.Name] = h.DataPoints[0]
			}
		}
	}
	for _, tc := range []struct {
		name  string
		count uint64
		sum   float64
	}{
		{MetricQueueDuration, 2, 0.006},
		{MetricSentDuration, 1, 0.001},
		{MetricCommitDuration, 1, 0.02},
	} {
		p, ok := got[tc.name]
		if !ok {
			t.Errorf("no %s histogram (of one series)", tc.name)
			continue
		}
		if v, _ := p.Attributes.Value(AttrInstance); p.Count != tc.count || p.Sum != tc.sum || v.AsInt64() != 1 {
			t.Errorf("%s: count %d, sum %v, instance %d; want %d, %v, 1", tc.name, p.Count, p.Sum, v.AsInt64(), tc.count, tc.sum)
		}
	}
	if _, ok := got[MetricProcessDuration]; ok {
		t.Error("a processing histogram without Processed")
	}
}

func TestStageNames(t *testing.T) {
	for s, want := range map[status.Stage]string{status.StageSent: "sent", status.StageQueue: "queue", status.StageCommit: "commit", 7: "stage(7)"} {
		if s.String() != want {
			t.Errorf("Stage(%d) = %q, want %q", s, s.String(), want)
		}
	}
}
