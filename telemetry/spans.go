package telemetry

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The runtime's spans do not go through the OpenTelemetry SDK's tracer.
// They all have one shape (see StartSpan), so an instance records a span
// as a spanRecord, a few words, and a spanQueue hands batches of them to
// the exporters from a goroutine of its own, each record as a ReadOnlySpan
// (exported). The SDK's tracer cost an instance 3.5 µs a span measured
// alone and about 11 µs within a run (14 allocations, a sampler, a span
// processor waking its goroutine for each span); a spanRecord costs its
// allocation and a mutex.

// spanRecord is one finished span of the runtime's.
type spanRecord struct {
	sc, parent trace.SpanContext // parent invalid: a source's root span
	operator   string
	node       string
	stream     string // input stream (processing spans)
	instance   int
	queueWait  time.Duration // processing spans
	start, end time.Time
	errType    string // the error ending the span ("": none)
	errMsg     string
	q          *spanQueue
	ended      bool
}

// finish ends the span with err (nil: success) and queues it for export.
// Only the first call counts, as with an OpenTelemetry span's End.
func (r *spanRecord) finish(err error) {
	if r.ended {
		return
	}
	r.ended, r.end = true, time.Now()
	if err != nil {
		r.errType, r.errMsg = errorType(err), err.Error()
	}
	r.q.add(r)
}

// errorType names err's type as the SDK's RecordError does.
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.PkgPath() == "" && t.Name() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// exported is a spanRecord as an exporter takes it. The record itself is
// the sdktrace.ReadOnlySpan, so that a span costs no copy on its way to
// an exporter (on a machine where fresh memory is dear, the SDK's
// snapshots cost more than the spans). ReadOnlySpan has an unexported
// method so that only the SDK implements it; the embedded nil interface
// provides it, and TestExportedSpanImplementsEveryMethod fails if a new
// SDK adds a method that exported does not define itself.
type exported struct {
	sdktrace.ReadOnlySpan // nil: only its unexported method is used
	*spanRecord
}

// Name implements sdktrace.ReadOnlySpan.
func (e exported) Name() string {
	if e.parent.IsValid() {
		return SpanProcess + e.operator
	}
	return SpanProduce + e.operator
}

// SpanContext implements sdktrace.ReadOnlySpan.
func (e exported) SpanContext() trace.SpanContext { return e.sc }

// Parent implements sdktrace.ReadOnlySpan: invalid for a root span.
func (e exported) Parent() trace.SpanContext { return e.parent }

// SpanKind implements sdktrace.ReadOnlySpan: a source's span is a
// producer, an operator's processing span a consumer.
func (e exported) SpanKind() trace.SpanKind {
	if e.parent.IsValid() {
		return trace.SpanKindConsumer
	}
	return trace.SpanKindProducer
}

// StartTime implements sdktrace.ReadOnlySpan.
func (e exported) StartTime() time.Time { return e.start }

// EndTime implements sdktrace.ReadOnlySpan.
func (e exported) EndTime() time.Time { return e.end }

// Attributes implements sdktrace.ReadOnlySpan (a new slice each call).
func (e exported) Attributes() []attribute.KeyValue {
	attrs := append(make([]attribute.KeyValue, 0, 5),
		AttrOperator.String(e.operator), AttrInstance.Int(e.instance), AttrNode.String(e.node))
	if e.parent.IsValid() {
		attrs = append(attrs, AttrStream.String(e.stream), AttrQueueWait.Float64(e.queueWait.Seconds()))
	}
	return attrs
}

// Links implements sdktrace.ReadOnlySpan: none.
func (e exported) Links() []sdktrace.Link { return nil }

// Events implements sdktrace.ReadOnlySpan: the exception event of a span
// ended with an error, as the SDK's RecordError makes it.
func (e exported) Events() []sdktrace.Event {
	if e.errType == "" {
		return nil
	}
	return []sdktrace.Event{{Name: semconv.ExceptionEventName, Time: e.end,
		Attributes: []attribute.KeyValue{semconv.ExceptionType(e.errType), semconv.ExceptionMessage(e.errMsg)}}}
}

// Status implements sdktrace.ReadOnlySpan: Error with the error's message
// for a span ended with an error, else Unset.
func (e exported) Status() sdktrace.Status {
	if e.errType == "" {
		return sdktrace.Status{}
	}
	return sdktrace.Status{Code: codes.Error, Description: e.errMsg}
}

// InstrumentationScope implements sdktrace.ReadOnlySpan: ScopeName.
func (e exported) InstrumentationScope() instrumentation.Scope {
	return instrumentation.Scope{Name: ScopeName}
}

// InstrumentationLibrary implements sdktrace.ReadOnlySpan (deprecated
// there): ScopeName.
func (e exported) InstrumentationLibrary() instrumentation.Library {
	return instrumentation.Library{Name: ScopeName}
}

// Resource implements sdktrace.ReadOnlySpan: the node's.
func (e exported) Resource() *resource.Resource { return e.q.res }

// DroppedAttributes implements sdktrace.ReadOnlySpan: none.
func (e exported) DroppedAttributes() int { return 0 }

// DroppedLinks implements sdktrace.ReadOnlySpan: none.
func (e exported) DroppedLinks() int { return 0 }

// DroppedEvents implements sdktrace.ReadOnlySpan: none.
func (e exported) DroppedEvents() int { return 0 }

// ChildSpanCount implements sdktrace.ReadOnlySpan: not counted (children
// are recorded by other instances, often on other nodes).
func (e exported) ChildSpanCount() int { return 0 }

// newTraceID returns a random, valid trace ID.
func newTraceID() (id trace.TraceID) {
	for !id.IsValid() {
		binary.LittleEndian.PutUint64(id[:8], rand.Uint64())
		binary.LittleEndian.PutUint64(id[8:], rand.Uint64())
	}
	return id
}

// newSpanID returns a random, valid span ID.
func newSpanID() (id trace.SpanID) {
	for !id.IsValid() {
		binary.LittleEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}

// Defaults of the span queue, the SDK batch span processor's; the
// OTEL_BSP_* variables override them as they do the SDK's.
const (
	defaultScheduleDelay = 5 * time.Second
	defaultExportTimeout = 30 * time.Second
	defaultMaxQueue      = 2048
	defaultMaxBatch      = 512
)

// queueOptions are a span queue's batching settings.
type queueOptions struct {
	delay    time.Duration // between exports
	timeout  time.Duration // of one export
	maxQueue int           // spans waiting; more are dropped
	maxBatch int           // spans in one export
}

// queueOptionsFromEnv returns the defaults with OTEL_BSP_SCHEDULE_DELAY,
// OTEL_BSP_EXPORT_TIMEOUT (milliseconds), OTEL_BSP_MAX_QUEUE_SIZE and
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE applied, as the SDK reads them.
func queueOptionsFromEnv() (queueOptions, error) {
	o := queueOptions{delay: defaultScheduleDelay, timeout: defaultExportTimeout, maxQueue: defaultMaxQueue, maxBatch: defaultMaxBatch}
	var errs []error
	for _, v := range []struct {
		env  string
		ms   *time.Duration
		size *int
	}{
		{"OTEL_BSP_SCHEDULE_DELAY", &o.delay, nil},
		{"OTEL_BSP_EXPORT_TIMEOUT", &o.timeout, nil},
		{"OTEL_BSP_MAX_QUEUE_SIZE", nil, &o.maxQueue},
		{"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", nil, &o.maxBatch},
	} {
		s := os.Getenv(v.env)
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("telemetry: %s=%q: want a positive integer", v.env, s))
			continue
		}
		if v.ms != nil {
			*v.ms = time.Duration(n) * time.Millisecond
		} else {
			*v.size = n
		}
	}
	o.maxBatch = min(o.maxBatch, o.maxQueue)
	return o, errors.Join(errs...)
}

// spanQueue holds finished spans until its goroutine exports them: every
// delay, as soon as maxBatch are waiting, on flush and on shutdown. Spans
// beyond maxQueue are dropped and counted, as the SDK's batch span
// processor does, so that a slow collector never holds up the records.
type spanQueue struct {
	exporters []sdktrace.SpanExporter
	res       *resource.Resource
	opts      queueOptions

	mu      sync.Mutex
	pending []*spanRecord
	dropped int
	stopped bool

	handle   func(error)   // the goroutine's export errors
	kick     chan struct{} // maxBatch spans wait
	exportMu sync.Mutex    // one export at a time
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// newSpanQueue starts the goroutine of a queue exporting to exporters.
// Its export errors (dropped spans included) go to otel.Handle, the global
// error handler, which logs them.
func newSpanQueue(res *resource.Resource, opts queueOptions, exporters ...sdktrace.SpanExporter) *spanQueue {
	q := &spanQueue{exporters: exporters, res: res, opts: opts, handle: otel.Handle,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go q.run()
	return q
}

// add queues a finished span.
func (q *spanQueue) add(r *spanRecord) {
	q.mu.Lock()
	switch {
	case q.stopped:
		q.mu.Unlock()
		return
	case len(q.pending) >= q.opts.maxQueue:
		q.dropped++
		q.mu.Unlock()
		return
	}
	q.pending = append(q.pending, r)
	full := len(q.pending) == q.opts.maxBatch
	q.mu.Unlock()
	if full {
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
}

func (q *spanQueue) run() {
	defer close(q.done)
	tick := time.NewTicker(q.opts.delay)
	defer tick.Stop()
	for {
		select {
		case <-q.stop:
			return
		case <-q.kick:
		case <-tick.C:
		}
		if err := q.export(context.Background()); err != nil {
			q.handle(err)
		}
	}
}

// export hands every span waiting to the exporters, maxBatch at a time,
// each export bounded by the export timeout and ctx.
func (q *spanQueue) export(ctx context.Context) error {
	q.exportMu.Lock()
	defer q.exportMu.Unlock()
	q.mu.Lock()
	batch, dropped := q.pending, q.dropped
	q.pending, q.dropped = nil, 0
	q.mu.Unlock()
	var errs []error
	if dropped > 0 {
		errs = append(errs, fmt.Errorf("telemetry: %d spans dropped: %d were waiting for export (OTEL_BSP_MAX_QUEUE_SIZE)", dropped, q.opts.maxQueue))
	}
	spans := make([]sdktrace.ReadOnlySpan, 0, min(len(batch), q.opts.maxBatch))
	for len(batch) > 0 {
		n := min(len(batch), q.opts.maxBatch)
		spans = spans[:0]
		for _, r := range batch[:n] {
			spans = append(spans, exported{spanRecord: r})
		}
		batch = batch[n:]
		for _, e := range q.exporters {
			ectx, cancel := context.WithTimeout(ctx, q.opts.timeout)
			if err := e.ExportSpans(ectx, spans); err != nil {
				errs = append(errs, fmt.Errorf("telemetry: exporting %d spans: %w", len(spans), err))
			}
			cancel()
		}
	}
	return errors.Join(errs...)
}

// shutdown stops the goroutine, exports what is waiting and shuts the
// exporters down; spans ended later are dropped. Calls after the first
// do nothing.
func (q *spanQueue) shutdown(ctx context.Context) error {
	var err error
	q.stopOnce.Do(func() {
		close(q.stop)
		select {
		case <-q.done:
		case <-ctx.Done():
			err = fmt.Errorf("telemetry: span export still running: %w", ctx.Err())
			return
		}
		q.mu.Lock()
		q.stopped = true
		q.mu.Unlock()
		errs := []error{q.export(ctx)}
		for _, e := range q.exporters {
			errs = append(errs, e.Shutdown(ctx))
		}
		err = errors.Join(errs...)
	})
	return err
}
