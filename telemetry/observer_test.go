package telemetry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/status"
)

// newTest builds a Telemetry from cfg, shut down with the test.
func newTest(t *testing.T, cfg Config) *Telemetry {
	t.Helper()
	tel, err := New(context.Background(), "n1", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

func TestSpansChainThroughOperators(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel := newTest(t, Config{SpanExporter: exp, Sampling: Sampling{Every: 1}})
	obs := tel.Observer()
	if first, every := obs.Sample("gen", 4); first != 0 || every != 1 {
		t.Fatalf("Sample = %d, %d with every record sampled, want 0, 1", first, every)
	}
	start := time.Now()
	root, end := obs.StartSpan(status.SpanInfo{Operator: "gen", Instance: 1, Node: "n1", Start: start})
	end(nil)
	mid, end := obs.StartSpan(status.SpanInfo{Parent: root, Operator: "count", Instance: 3, Node: "n2", Stream: "words", QueueWait: 5 * time.Millisecond, Start: start})
	end(errors.New("boom"))
	leaf, end := obs.StartSpan(status.SpanInfo{Parent: mid, Operator: "sink", Instance: 0, Node: "n1", Stream: "counts", Start: start})
	end(nil)
	if err := tel.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans exported, want 3", len(spans))
	}
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	g, c, s := byName["produce gen"], byName["process count"], byName["process sink"]
	for name, sp := range map[string]tracetest.SpanStub{"produce gen": g, "process count": c, "process sink": s} {
		if sp.Name == "" {
			t.Fatalf("no span %q among %v", name, names(spans))
		}
	}
	for _, tc := range []struct {
		span   tracetest.SpanStub
		header string
		parent trace.SpanID
		kind   trace.SpanKind
	}{
		{g, root, trace.SpanID{}, trace.SpanKindProducer},
		{c, mid, g.SpanContext.SpanID(), trace.SpanKindConsumer},
		{s, leaf, c.SpanContext.SpanID(), trace.SpanKindConsumer},
	} {
		if got := FormatTraceparent(tc.span.SpanContext); got != tc.header {
			t.Errorf("%s: header handed to records %q, span is %q", tc.span.Name, tc.header, got)
		}
		if tc.span.SpanContext.TraceID() != g.SpanContext.TraceID() {
			t.Errorf("%s: trace %s, want the root's %s", tc.span.Name, tc.span.SpanContext.TraceID(), g.SpanContext.TraceID())
		}
		if tc.span.Parent.SpanID() != tc.parent {
			t.Errorf("%s: parent %s, want %s", tc.span.Name, tc.span.Parent.SpanID(), tc.parent)
		}
		if tc.span.SpanKind != tc.kind {
			t.Errorf("%s: kind %v, want %v", tc.span.Name, tc.span.SpanKind, tc.kind)
		}
		if !tc.span.StartTime.Equal(start) {
			t.Errorf("%s: starts %v, want %v", tc.span.Name, tc.span.StartTime, start)
		}
	}
	want := map[attribute.Key]attribute.Value{
		AttrOperator: attribute.StringValue("count"), AttrInstance: attribute.IntValue(3), AttrNode: attribute.StringValue("n2"),
		AttrStream: attribute.StringValue("words"), AttrQueueWait: attribute.Float64Value(0.005),
	}
	got := map[attribute.Key]attribute.Value{}
	for _, kv := range c.Attributes {
		got[kv.Key] = kv.Value
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("count span: %s = %v, want %v", k, got[k].Emit(), v.Emit())
		}
	}
	if c.Status.Code != codes.Error || c.Status.Description != "boom" {
		t.Errorf("count span status %+v, want error \"boom\"", c.Status)
	}
	if len(c.Events) != 1 || c.Events[0].Name != "exception" ||
		!slices.Contains(c.Events[0].Attributes, attribute.String("exception.type", "*errors.errorString")) ||
		!slices.Contains(c.Events[0].Attributes, attribute.String("exception.message", "boom")) {
		t.Errorf("count span events %+v, want one exception event of *errors.errorString \"boom\"", c.Events)
	}
	if c.Resource == nil || c.InstrumentationScope.Name != ScopeName {
		t.Errorf("count span resource %v, scope %q; want the node's resource and %q", c.Resource, c.InstrumentationScope.Name, ScopeName)
	}
	if g.Status.Code == codes.Error || s.Status.Code == codes.Error {
		t.Errorf("gen/sink spans have error status")
	}
}

func TestStartSpanLeavesOtherHeadersAlone(t *testing.T) {
	const unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	const sampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	exp := tracetest.NewInMemoryExporter()
	tracing := newTest(t, Config{SpanExporter: exp, Sampling: Sampling{Every: 1}})
	metricsOnly := newTest(t, Config{MetricExporter: &captureMetrics{}, Sampling: Sampling{Every: 1}})
	for _, tc := range []struct {
		name   string
		tel    *Telemetry
		parent string
		want   string
	}{
		{"unsampled parent passes on", tracing, unsampled, unsampled},
		{"invalid parent: record continues untraced", tracing, "garbage", ""},
		{"node without tracing passes the header on", metricsOnly, sampled, sampled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, end := tc.tel.Observer().StartSpan(status.SpanInfo{Parent: tc.parent, Operator: "count", Start: time.Now()})
			end(nil)
			if got != tc.want {
				t.Fatalf("StartSpan(parent %q) = %q, want %q", tc.parent, got, tc.want)
			}
		})
	}
	if err := tracing.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans exported for unsampled or invalid parents, want 0", n)
	}
	if _, every := metricsOnly.Observer().Sample("gen", 64); every != 0 {
		t.Fatal("a node that records no spans sampled records")
	}
}

func TestOffConfigInstallsNothing(t *testing.T) {
	tel := newTest(t, Config{Sampling: Sampling{Every: 1}})
	if tel.Observer() != nil || tel.Handler() != nil {
		t.Fatalf("telemetry off: observer %v, handler %v, want none", tel.Observer(), tel.Handler())
	}
	var none *Telemetry
	none.Attach(nil)
	if none.Observer() != nil || none.Shutdown(context.Background()) != nil {
		t.Fatal("nil Telemetry is not inert")
	}
}

// fakeNode serves a fixed status.
type fakeNode struct{ ops []status.OperatorStatus }

func (f fakeNode) Status() []status.OperatorStatus { return f.ops }
func (f fakeNode) Buffered() int64                 { return 42 }
func (f fakeNode) Streams() []actors.StreamStatus {
	return []actors.StreamStatus{{Stream: "words", Dropped: 12}, {Stream: "counts", Held: 300}}
}

func TestMetricsReadTheNodeStatus(t *testing.T) {
	exp := &captureMetrics{}
	tel := newTest(t, Config{MetricExporter: exp, MetricInterval: time.Hour, RuntimeMetrics: true})
	tel.Attach(fakeNode{ops: []status.OperatorStatus{
		{Name: "count", Instances: []status.InstanceStatus{
			{Index: 0, Epoch: 1, State: "running", Processed: 100, Produced: 90, Restarts: 2, DeadLetters: 1, TransientErrors: 4, Queued: 7, StateBytes: 4096},
			{Index: 0, Epoch: 2, State: "awaiting", Processed: 5, Queued: 3},
			{Index: 1, Epoch: 1, State: "released", Processed: 1000},
		}},
	}})
	obs := tel.Observer()
	obs.Processed("count", 0, 2*time.Millisecond, 300*time.Millisecond)
	obs.Processed("count", 0, 4*time.Millisecond, 0) // no event time: no end-to-end sample

	if err := tel.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rm := exp.get()
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	inst0 := attribute.NewSet(AttrOperator.String("count"), AttrInstance.Int(0))
	for _, tc := range []struct {
		name, unit string
		want       int64
	}{
		{MetricConsumed, "{record}", 105},
		{MetricProduced, "{record}", 90},
		{MetricRestarts, "{restart}", 2},
		{MetricDeadLetters, "{record}", 1},
		{MetricTransientErrors, "{error}", 4},
		{MetricMailbox, "{record}", 10},
		{MetricStateSize, "By", 4096},
	} {
		m, ok := got[tc.name]
		if !ok {
			t.Errorf("no metric %s", tc.name)
			continue
		}
		if m.Unit != tc.unit {
			t.Errorf("%s: unit %q, want %q", tc.name, m.Unit, tc.unit)
		}
		points := sumPoints(m)
		if len(points) != 1 {
			t.Errorf("%s: %d series, want 1 (released instances left out): %v", tc.name, len(points), points)
			continue
		}
		if !points[0].Attributes.Equals(&inst0) || points[0].Value != tc.want {
			t.Errorf("%s: %v = %d, want %v = %d", tc.name, points[0].Attributes.Encoded(attribute.DefaultEncoder()), points[0].Value,
				inst0.Encoded(attribute.DefaultEncoder()), tc.want)
		}
	}
	if p := sumPoints(got[MetricBuffered]); len(p) != 1 || p[0].Value != 42 {
		t.Errorf("%s: %v, want 42", MetricBuffered, p)
	}
	for _, tc := range []struct {
		name   string
		stream string
		want   int64
	}{
		{MetricStreamDropped, "words", 12},
		{MetricStreamDropped, "counts", 0},
		{MetricStreamHeld, "counts", 300},
		{MetricStreamHeld, "words", 0},
	} {
		found := false
		for _, p := range sumPoints(got[tc.name]) {
			if v, _ := p.Attributes.Value(AttrStream); v.AsString() == tc.stream {
				found = true
				if p.Value != tc.want {
					t.Errorf("%s{stream=%s} = %d, want %d", tc.name, tc.stream, p.Value, tc.want)
				}
			}
		}
		if !found {
			t.Errorf("no %s series for stream %s", tc.name, tc.stream)
		}
	}
	for _, tc := range []struct {
		name  string
		count uint64
		sum   float64
	}{
		{MetricProcessDuration, 2, 0.006},
		{MetricEndToEnd, 1, 0.3},
	} {
		h, ok := got[tc.name].Data.(metricdata.Histogram[float64])
		if !ok || len(h.DataPoints) != 1 || got[tc.name].Unit != "s" {
			t.Errorf("%s: %+v, want one histogram series in seconds", tc.name, got[tc.name])
			continue
		}
		p := h.DataPoints[0]
		if p.Count != tc.count || p.Sum != tc.sum || !p.Attributes.Equals(&inst0) || h.Temporality != metricdata.CumulativeTemporality {
			t.Errorf("%s: count %d, sum %v, attributes %v, %v; want %d, %v, instance 0, cumulative",
				tc.name, p.Count, p.Sum, p.Attributes.Encoded(attribute.DefaultEncoder()), h.Temporality, tc.count, tc.sum)
		}
	}
	for _, name := range []string{"process.cpu.time", "process.memory.usage", "go.memory.used", "go.goroutine.count"} {
		if _, ok := got[name]; !ok {
			t.Errorf("no runtime metric %s", name)
		}
	}
	if v, ok := rm.Resource.Set().Value("service.instance.id"); !ok || v.AsString() != "n1" {
		t.Errorf("resource service.instance.id = %v, want n1", v.Emit())
	}
}

func TestHistogramBuckets(t *testing.T) {
	b := newBuckets(0.001, 0.01)
	h := newHistogram(&b, time.Now())
	for _, d := range []time.Duration{0, time.Millisecond, time.Millisecond + 1, 10 * time.Millisecond, time.Second} {
		h.record(d)
	}
	p, ok := h.point(attribute.NewSet(), time.Now())
	// Upper bounds are inclusive: (-inf, 1ms] (1ms, 10ms] (10ms, +inf).
	if !ok || p.Count != 5 || fmt.Sprint(p.BucketCounts) != "[2 2 1]" || fmt.Sprint(p.Bounds) != "[0.001 0.01]" {
		t.Fatalf("histogram: count %d, buckets %v over bounds %v; want 5, [2 2 1] over [0.001 0.01]", p.Count, p.BucketCounts, p.Bounds)
	}
	if _, ok := newHistogram(&b, time.Now()).point(attribute.NewSet(), time.Now()); ok {
		t.Fatal("an empty histogram made a data point")
	}
}

func sumPoints(m metricdata.Metrics) []metricdata.DataPoint[int64] {
	if s, ok := m.Data.(metricdata.Sum[int64]); ok {
		return s.DataPoints
	}
	return nil
}

func TestProcessedDoesNotAllocate(t *testing.T) {
	tel := newTest(t, Config{MetricExporter: &captureMetrics{}})
	obs := tel.Observer()
	obs.Processed("count", 3, time.Microsecond, time.Millisecond)
	if n := testing.AllocsPerRun(1000, func() { obs.Processed("count", 3, time.Microsecond, time.Millisecond) }); n > 0 {
		t.Fatalf("%v allocations per Processed, want 0", n)
	}
}

// captureMetrics is a metric exporter keeping the last export.
type captureMetrics struct {
	mu   sync.Mutex
	last metricdata.ResourceMetrics
}

func (c *captureMetrics) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}
func (c *captureMetrics) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}
func (c *captureMetrics) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = *rm
	return nil
}
func (c *captureMetrics) ForceFlush(context.Context) error { return nil }
func (c *captureMetrics) Shutdown(context.Context) error   { return nil }

func (c *captureMetrics) get() metricdata.ResourceMetrics {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

func names(spans tracetest.SpanStubs) string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return strings.Join(out, ", ")
}

func BenchmarkProcessed(b *testing.B) {
	tel, err := New(context.Background(), "n1", Config{MetricExporter: &captureMetrics{}})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	obs := tel.Observer()
	b.ReportAllocs()
	for b.Loop() {
		obs.Processed("count", 3, time.Microsecond, time.Millisecond)
	}
}

// BenchmarkStartSpan measures a processing span, started and ended, as an
// operator instance makes one for a traced record.
func BenchmarkStartSpan(b *testing.B) {
	tel, err := New(context.Background(), "n1", Config{SpanExporter: tracetest.NewNoopExporter(), Sampling: Sampling{Every: 1000}})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	obs := tel.Observer()
	parent, end := obs.StartSpan(status.SpanInfo{Operator: "gen", Node: "n1", Start: time.Now()})
	end(nil)
	b.ReportAllocs()
	for b.Loop() {
		_, end := obs.StartSpan(status.SpanInfo{Parent: parent, Operator: "count", Instance: 2, Node: "n1",
			Stream: "words", QueueWait: time.Millisecond, Start: time.Now()})
		end(nil)
	}
}
