package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/actors"
)

// Span attribute keys (see docs/observability.md).
const (
	AttrOperator  = attribute.Key("sluice.operator.name")      // operator name (spans and metrics)
	AttrInstance  = attribute.Key("sluice.operator.instance")  // instance index (spans and metrics)
	AttrNode      = attribute.Key("sluice.node.id")            // node ID (spans)
	AttrStream    = attribute.Key("sluice.stream.name")        // input stream (processing spans); stream (stream metrics)
	AttrQueueWait = attribute.Key("sluice.queue.wait_seconds") // time the record's batch waited to be processed (processing spans)
)

// Span name prefixes: a source producing a sampled record makes a
// "produce <operator>" span (kind producer); an operator processing a
// traced record makes a "process <operator>" span (kind consumer), a child
// of the span that produced the record.
const (
	SpanProduce = "produce "
	SpanProcess = "process "
)

// observer implements actors.Observer with OpenTelemetry.
type observer struct {
	sampler *sampler
	tracer  trace.Tracer // nil: this node records no spans
	metrics *metrics     // nil: no metrics
}

var _ actors.Observer = (*observer)(nil)

// noEnd ends no span.
var noEnd = func(error) {}

// Sample implements actors.Observer: one record in N of each source
// operator's, per Config.Sampling; none when the node records no spans.
func (o *observer) Sample(operator string, n int) (first, every int) {
	if o.tracer == nil {
		return 0, 0
	}
	return o.sampler.reserve(operator, n)
}

// StartSpan implements actors.Observer. A record whose parent is invalid
// continues untraced; one whose parent is not sampled (the W3C flag),
// or that reaches a node that records no spans, keeps its parent's header
// and gets no span here.
func (o *observer) StartSpan(info actors.SpanInfo) (string, func(error)) {
	if o.tracer == nil {
		return info.Parent, noEnd
	}
	ctx := context.Background()
	name, kind := SpanProduce+info.Operator, trace.SpanKindProducer
	attrs := [5]attribute.KeyValue{AttrOperator.String(info.Operator), AttrInstance.Int(info.Instance), AttrNode.String(info.Node)}
	nattrs := 3
	if info.Parent != "" {
		parent, ok := ParseTraceparent(info.Parent)
		if !ok {
			return "", noEnd
		}
		if !parent.IsSampled() {
			return info.Parent, noEnd
		}
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
		name, kind = SpanProcess+info.Operator, trace.SpanKindConsumer
		attrs[3], attrs[4], nattrs = AttrStream.String(info.Stream), AttrQueueWait.Float64(info.QueueWait.Seconds()), 5
	}
	start := info.Start
	if start.IsZero() {
		start = time.Now()
	}
	_, span := o.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(start))
	// The attributes are set on the started span rather than passed with
	// trace.WithAttributes, which copies them once more (its option keeps
	// them for the sampler, and the parent-based sampler does not read
	// them).
	span.SetAttributes(attrs[:nattrs]...)
	return FormatTraceparent(span.SpanContext()), func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// Processed implements actors.Observer: it records the processing time and
// the time since the event in the histograms.
func (o *observer) Processed(operator string, index int, processing, sinceEvent time.Duration) {
	if o.metrics != nil {
		o.metrics.processed(operator, index, processing, sinceEvent)
	}
}

// Restarted implements actors.Observer. The restart counts are read from
// the node's status at collection time (sluice.operator.restarts), so the
// event itself needs nothing.
func (o *observer) Restarted(string, int) {}

// DeadLettered implements actors.Observer; like Restarted, the counts come
// from the node's status (sluice.operator.dead_letters).
func (o *observer) DeadLettered(string, int) {}
