package telemetry

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/actors/status"
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

// observer implements status.Observer with OpenTelemetry.
type observer struct {
	sampler *sampler
	spans   *spanQueue // nil: this node records no spans
	metrics *metrics   // nil: no metrics
}

var _ status.Observer = (*observer)(nil)

// noEnd ends no span.
var noEnd = func(error) {}

// Sample implements status.Observer: one record in N of each source
// operator's, per Config.Sampling; none when the node records no spans.
func (o *observer) Sample(operator string, n int) (first, every int) {
	if o.spans == nil {
		return 0, 0
	}
	return o.sampler.reserve(operator, n)
}

// StartSpan implements status.Observer. A record whose parent is invalid
// continues untraced; one whose parent is not sampled (the W3C flag),
// or that reaches a node that records no spans, keeps its parent's header
// and gets no span here. A root span (no parent) is sampled; a child
// keeps its parent's trace and flags.
func (o *observer) StartSpan(info status.SpanInfo) (string, func(error)) {
	if o.spans == nil {
		return info.Parent, noEnd
	}
	r := &spanRecord{operator: info.Operator, node: info.Node, instance: info.Instance, start: info.Start, q: o.spans}
	if r.start.IsZero() {
		r.start = time.Now()
	}
	cfg := trace.SpanContextConfig{SpanID: newSpanID(), TraceFlags: trace.FlagsSampled}
	if info.Parent == "" {
		cfg.TraceID = newTraceID()
	} else {
		parent, ok := ParseTraceparent(info.Parent)
		if !ok {
			return "", noEnd
		}
		if !parent.IsSampled() {
			return info.Parent, noEnd
		}
		cfg.TraceID, cfg.TraceFlags = parent.TraceID(), parent.TraceFlags()
		r.parent, r.stream, r.queueWait = parent, info.Stream, info.QueueWait
	}
	r.sc = trace.NewSpanContext(cfg)
	return FormatTraceparent(r.sc), r.finish
}

// Processed implements status.Observer: it records the processing time and
// the time since the event in the histograms.
func (o *observer) Processed(operator string, index int, processing, sinceEvent time.Duration) {
	if o.metrics != nil {
		o.metrics.processed(operator, index, processing, sinceEvent)
	}
}

// Restarted implements status.Observer. The restart counts are read from
// the node's status at collection time (sluice.operator.restarts), so the
// event itself needs nothing.
func (o *observer) Restarted(string, int) {}

// DeadLettered implements status.Observer; like Restarted, the counts come
// from the node's status (sluice.operator.dead_letters).
func (o *observer) DeadLettered(string, int) {}
