package telemetry

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/sluicetest"
)

// recordingExporter keeps the names of the spans it is given, can be held
// up, and fails its exports while failing is set.
type recordingExporter struct {
	mu       sync.Mutex
	names    []string
	failing  error
	shutdown int
	hold     chan struct{} // non-nil: each export waits for a receive
	entered  chan struct{} // non-nil: told when an export starts
}

func (e *recordingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.entered != nil {
		select {
		case e.entered <- struct{}{}:
		default:
		}
	}
	if e.hold != nil {
		<-e.hold
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failing != nil {
		return e.failing
	}
	for _, s := range spans {
		e.names = append(e.names, s.Name())
	}
	return nil
}

func (e *recordingExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shutdown++
	return nil
}

func (e *recordingExporter) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.names)
}

// rootSpan ends a root span of operator op through q.
func rootSpan(q *spanQueue, op string) {
	o := &observer{spans: q}
	_, end := o.StartSpan(status.SpanInfo{Operator: op, Node: "n1"})
	end(nil)
}

func TestSpanQueueDropsBeyondMaxQueueAndSaysSo(t *testing.T) {
	exp := &recordingExporter{}
	// No goroutine: export runs only when the test calls it.
	q := &spanQueue{exporters: []sdktrace.SpanExporter{exp}, opts: queueOptions{delay: time.Hour, timeout: time.Second, maxQueue: 8, maxBatch: 3},
		kick: make(chan struct{}, 1)}
	for range 11 {
		rootSpan(q, "gen")
	}
	err := q.export(context.Background())
	if err == nil || !strings.Contains(err.Error(), "3 spans dropped") {
		t.Fatalf("export after 11 spans into a queue of 8: err %v, want 3 spans dropped", err)
	}
	if n := exp.count(); n != 8 {
		t.Fatalf("%d spans exported, want the 8 queued (in batches of 3)", n)
	}
	rootSpan(q, "gen")
	if err := q.export(context.Background()); err != nil || exp.count() != 9 {
		t.Fatalf("next export: err %v, %d spans in all; want nil, 9", err, exp.count())
	}
}

func TestSpanQueueExportsWithoutFlush(t *testing.T) {
	t.Run("a full batch", func(t *testing.T) {
		exp := &recordingExporter{}
		q := newSpanQueue(nil, queueOptions{delay: time.Hour, timeout: time.Second, maxQueue: 16, maxBatch: 4}, exp)
		t.Cleanup(func() { _ = q.shutdown(context.Background()) })
		for range 4 {
			rootSpan(q, "gen")
		}
		sluicetest.WaitFor(t, 10*time.Second, "a full batch exported", func() bool { return exp.count() == 4 })
	})
	t.Run("the schedule delay", func(t *testing.T) {
		exp := &recordingExporter{}
		q := newSpanQueue(nil, queueOptions{delay: 10 * time.Millisecond, timeout: time.Second, maxQueue: 16, maxBatch: 4}, exp)
		t.Cleanup(func() { _ = q.shutdown(context.Background()) })
		rootSpan(q, "gen")
		sluicetest.WaitFor(t, 10*time.Second, "one span exported", func() bool { return exp.count() == 1 })
	})
}

func TestSpanQueueShutdownExportsWhatWaits(t *testing.T) {
	exp := &recordingExporter{}
	q := newSpanQueue(nil, queueOptions{delay: time.Hour, timeout: time.Second, maxQueue: 16, maxBatch: 16}, exp)
	o := &observer{spans: q}
	_, late := o.StartSpan(status.SpanInfo{Operator: "late", Node: "n1"})
	for range 3 {
		rootSpan(q, "gen")
	}
	if err := q.shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := q.shutdown(context.Background()); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
	late(nil) // ended after shutdown: dropped, no panic
	if n := exp.count(); n != 3 || exp.shutdown != 1 {
		t.Fatalf("after shutdown: %d spans exported, exporter shut down %d times; want 3, 1", n, exp.shutdown)
	}
}

func TestSpanQueueKeepsGoingAfterExportErrors(t *testing.T) {
	exp := &recordingExporter{failing: errors.New("collector down")}
	q := newSpanQueue(nil, queueOptions{delay: time.Hour, timeout: time.Second, maxQueue: 16, maxBatch: 16}, exp)
	t.Cleanup(func() { _ = q.shutdown(context.Background()) })
	rootSpan(q, "gen")
	if err := q.export(context.Background()); err == nil || !strings.Contains(err.Error(), "collector down") {
		t.Fatalf("export to a failing exporter: %v, want its error", err)
	}
	exp.mu.Lock()
	exp.failing = nil
	exp.mu.Unlock()
	rootSpan(q, "gen")
	if err := q.export(context.Background()); err != nil || exp.count() != 1 {
		t.Fatalf("export once the exporter works: err %v, %d spans; want nil, 1 (the failed batch is not retried, as with the SDK)", err, exp.count())
	}
}

func TestSpanQueueDoesNotHoldUpRecords(t *testing.T) {
	// A collector that does not answer: spans beyond the queue are
	// dropped, and ending a span never waits for the exporter.
	exp := &recordingExporter{hold: make(chan struct{}), entered: make(chan struct{}, 1)}
	handled := make(chan error, 10)
	q := &spanQueue{exporters: []sdktrace.SpanExporter{exp}, opts: queueOptions{delay: time.Hour, timeout: time.Second, maxQueue: 4, maxBatch: 2},
		handle: func(err error) { handled <- err }, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go q.run()
	for range 2 {
		rootSpan(q, "gen")
	}
	<-exp.entered // the goroutine is stuck in ExportSpans
	for range 100 {
		rootSpan(q, "gen")
	}
	q.mu.Lock()
	queued, dropped := len(q.pending), q.dropped
	q.mu.Unlock()
	if queued != 4 || dropped != 96 {
		t.Fatalf("with the exporter stuck: %d queued, %d dropped; want 4, 96", queued, dropped)
	}
	close(exp.hold)
	// The goroutine's next export or the shutdown's reports the drop.
	errs := []error{q.shutdown(context.Background())}
	close(handled)
	for err := range handled {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err == nil || !strings.Contains(err.Error(), "96 spans dropped") {
		t.Fatalf("errors reported: %v, want the 96 dropped spans", err)
	}
	if n := exp.count(); n != 6 {
		t.Fatalf("%d spans exported, want 6 (2 + the 4 queued)", n)
	}
}

func TestSpanEndsOnce(t *testing.T) {
	exp := &recordingExporter{}
	q := &spanQueue{exporters: []sdktrace.SpanExporter{exp}, opts: queueOptions{timeout: time.Second, maxQueue: 8, maxBatch: 8},
		kick: make(chan struct{}, 1)}
	o := &observer{spans: q}
	_, end := o.StartSpan(status.SpanInfo{Operator: "gen", Node: "n1"})
	end(nil)
	end(errors.New("again"))
	if err := q.export(context.Background()); err != nil || exp.count() != 1 {
		t.Fatalf("a span ended twice: err %v, %d exported; want nil, 1", err, exp.count())
	}
}

func TestChildSpansKeepTheParentsTraceAndFlags(t *testing.T) {
	q := &spanQueue{opts: queueOptions{maxQueue: 8, maxBatch: 8}, kick: make(chan struct{}, 1)}
	o := &observer{spans: q}
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: newTraceID(), SpanID: newSpanID(),
		TraceFlags: trace.FlagsSampled | trace.FlagsRandom})
	tp, end := o.StartSpan(status.SpanInfo{Parent: FormatTraceparent(parent), Operator: "count", Node: "n1"})
	end(nil)
	sc, ok := ParseTraceparent(tp)
	if !ok || sc.TraceID() != parent.TraceID() || sc.TraceFlags() != parent.TraceFlags() || sc.SpanID() == parent.SpanID() {
		t.Fatalf("child header %q of parent %s/%s flags %s", tp, parent.TraceID(), parent.SpanID(), parent.TraceFlags())
	}
	root, end := o.StartSpan(status.SpanInfo{Operator: "gen", Node: "n1"})
	end(nil)
	if sc, ok := ParseTraceparent(root); !ok || !sc.IsSampled() || sc.TraceID() == parent.TraceID() {
		t.Fatalf("root header %q: want a new sampled trace", root)
	}
}

func TestQueueOptionsFromEnv(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "250")
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "100")
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "512")
	o, err := queueOptionsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	want := queueOptions{delay: 250 * time.Millisecond, timeout: defaultExportTimeout, maxQueue: 100, maxBatch: 100}
	if o != want {
		t.Fatalf("options %+v, want %+v (a batch no larger than the queue)", o, want)
	}
	t.Setenv("OTEL_BSP_EXPORT_TIMEOUT", "5s")
	if _, err := New(context.Background(), "n1", Config{SpanExporter: &recordingExporter{}, Sampling: Sampling{Every: 1}}); err == nil ||
		!strings.Contains(err.Error(), "OTEL_BSP_EXPORT_TIMEOUT") {
		t.Fatalf("New with OTEL_BSP_EXPORT_TIMEOUT=5s: %v, want an error naming it", err)
	}
}

func TestExportedSpanImplementsEveryMethod(t *testing.T) {
	// exported gets sdktrace.ReadOnlySpan's unexported method from a nil
	// embedded interface; a method it does not define itself would be
	// promoted from that nil and panic when an exporter calls it.
	e := exported{spanRecord: &spanRecord{q: &spanQueue{}}}
	v := reflect.ValueOf(e)
	iface := reflect.TypeFor[sdktrace.ReadOnlySpan]()
	for i := range iface.NumMethod() {
		m := iface.Method(i)
		if !m.IsExported() {
			continue
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("ReadOnlySpan.%s is not defined by exported: %v", m.Name, p)
				}
			}()
			v.MethodByName(m.Name).Call(nil)
		}()
	}
}
