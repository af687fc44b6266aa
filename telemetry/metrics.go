package telemetry

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/status"
)

// Metric names. Prometheus sees them with dots as underscores, the unit
// appended ("_seconds", "_bytes") and "_total" on counters, e.g.
// sluice_operator_consumed_records_total (see docs/observability.md).
// Per-instance metrics carry AttrOperator and AttrInstance; the node is the
// resource's service.instance.id.
const (
	// MetricConsumed counts records taken from an instance's inputs
	// (including dead-lettered ones); counter, {record}.
	MetricConsumed = "sluice.operator.consumed.records"
	// MetricProduced counts records an instance produced (dead letters
	// excluded); counter, {record}.
	MetricProduced = "sluice.operator.produced.records"
	// MetricProcessDuration is the time ProcessRecord took, for one record
	// in status.ProcessedSampleEvery (256) and the first of each small
	// batch; histogram, s.
	MetricProcessDuration = "sluice.operator.process.duration"
	// MetricEndToEnd is the time from a record's event time to the end of
	// its processing by this operator, for the same sample; histogram, s.
	MetricEndToEnd = "sluice.operator.end_to_end.duration"
	// MetricMailbox is the number of records delivered to an instance and
	// not yet processed; updowncounter, {record}.
	MetricMailbox = "sluice.operator.mailbox.length"
	// MetricRestarts counts an instance's restarts on this node; counter,
	// {restart}.
	MetricRestarts = "sluice.operator.restarts"
	// MetricDeadLetters counts records and timers an instance sent to its
	// dead-letter stream; counter, {record}.
	MetricDeadLetters = "sluice.operator.dead_letters"
	// MetricTransientErrors counts an instance's transient failures (Poll,
	// Flush or a state log append reporting sdk.ErrTransient, e.g. Kafka
	// brokers unreachable), which are retried rather than restarts;
	// counter, {error}.
	MetricTransientErrors = "sluice.operator.transient_errors"
	// MetricStateSize estimates the disk space of an instance's state;
	// updowncounter, By.
	MetricStateSize = "sluice.operator.state.size"
	// MetricBuffered is the number of records the node's instances hold in
	// output buffers; updowncounter, {record}.
	MetricBuffered = "sluice.node.buffered.records"
	// MetricStreamDropped counts records produced on the node to a stream
	// no operator read, which were discarded (without durability tracking;
	// dead letters in every mode); counter, {record}, with AttrStream.
	MetricStreamDropped = "sluice.stream.dropped.records"
	// MetricStreamHeld is the number of records producers on the node hold
	// for a stream no operator reads yet (with durability tracking);
	// updowncounter, {record}, with AttrStream.
	MetricStreamHeld = "sluice.stream.held.records"
)

// Histogram bucket boundaries, in seconds.
var (
	processBuckets  = newBuckets(1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
	endToEndBuckets = newBuckets(1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
)

// Node is what the metrics read from a running node at collection time;
// *actors.Node implements it.
type Node interface {
	Status() []status.OperatorStatus
	Buffered() int64
	Streams() []actors.StreamStatus
}

var _ Node = (*actors.Node)(nil)

// metrics holds the per-operator metrics. Counters and gauges are
// observable instruments: they read Node.Status when a reader collects,
// so the record path pays nothing for them. The two latency histograms
// are aggregated here (see histogram) for the sample of records the
// runtime times, and handed to the readers by Produce.
type metrics struct {
	consumed, produced, restarts, deadLetters, transient, dropped metric.Int64ObservableCounter
	mailbox, stateSize, buffered, held                            metric.Int64ObservableUpDownCounter

	node      atomic.Pointer[nodeRef] // nil until attached
	instances instanceCache
	ck        ckMetrics // checkpoints (checkpoints.go)
}

var _ sdkmetric.Producer = (*metrics)(nil)

type nodeRef struct{ Node }

// newMetrics returns the metrics; register creates their instruments.
func newMetrics() *metrics { return &metrics{} }

// register creates the observable instruments on meter.
func (m *metrics) register(meter metric.Meter) error {
	var err error
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, e := meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err == nil {
			err = e
		}
		return c
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableUpDownCounter {
		g, e := meter.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err == nil {
			err = e
		}
		return g
	}
	m.consumed = counter(MetricConsumed, "{record}", "Records taken from the instance's inputs.")
	m.produced = counter(MetricProduced, "{record}", "Records the instance produced (dead letters excluded).")
	m.restarts = counter(MetricRestarts, "{restart}", "Restarts of the instance on this node.")
	m.deadLetters = counter(MetricDeadLetters, "{record}", "Records and timers sent to the dead-letter stream.")
	m.transient = counter(MetricTransientErrors, "{error}", "Transient failures of Poll, Flush and state log appends (retried, e.g. brokers unreachable).")
	m.mailbox = gauge(MetricMailbox, "{record}", "Records delivered to the instance and not yet processed.")
	m.stateSize = gauge(MetricStateSize, "By", "Estimated disk space of the instance's state.")
	m.buffered = gauge(MetricBuffered, "{record}", "Records held in the node's output buffers.")
	m.dropped = counter(MetricStreamDropped, "{record}", "Records produced to a stream no operator read, discarded.")
	m.held = gauge(MetricStreamHeld, "{record}", "Records held for a stream no operator reads yet.")
	if err != nil {
		return fmt.Errorf("telemetry: create instruments: %w", err)
	}
	if _, err := meter.RegisterCallback(m.observe, m.consumed, m.produced, m.restarts, m.deadLetters, m.transient, m.mailbox, m.stateSize, m.buffered, m.dropped, m.held); err != nil {
		return fmt.Errorf("telemetry: register callback: %w", err)
	}
	if err := m.registerHealth(meter); err != nil {
		return err
	}
	return m.ck.register(meter)
}

// processed records one timed record. It neither locks nor allocates once
// the instance is known.
func (m *metrics) processed(operator string, index int, processing, sinceEvent time.Duration) {
	in := m.instances.get(operator, index)
	in.process.record(processing)
	if sinceEvent > 0 {
		in.endToEnd.record(sinceEvent)
	}
}

// Produce implements sdkmetric.Producer: the latency histograms of every
// instance that has timed a record on this node, cumulative since it
// first did.
func (m *metrics) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	now := time.Now()
	process := metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality}
	endToEnd := metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality}
	for _, in := range m.instances.all() {
		if p, ok := in.process.point(in.attrs, now); ok {
			process.DataPoints = append(process.DataPoints, p)
		}
		if p, ok := in.endToEnd.point(in.attrs, now); ok {
			endToEnd.DataPoints = append(endToEnd.DataPoints, p)
		}
	}
	out := m.stagesProduced(now)
	if len(process.DataPoints) > 0 {
		out = append(out, metricdata.Metrics{Name: MetricProcessDuration, Unit: "s",
			Description: sampleNote("Time ProcessRecord took"), Data: process})
	}
	if len(endToEnd.DataPoints) > 0 {
		out = append(out, metricdata.Metrics{Name: MetricEndToEnd, Unit: "s",
			Description: sampleNote("Time from a record's event time to the end of its processing by the operator"), Data: endToEnd})
	}
	if len(out) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{Scope: instrumentation.Scope{Name: ScopeName}, Metrics: out}}, nil
}

// instTotals sums one (operator, index)'s instances on the node.
type instTotals struct {
	consumed, produced, restarts, deadLetters, transient, queued, stateBytes int64
}

// observe reads the node's status for the observable instruments.
// Instances released to another node or stopped are left out (their
// successors report them); instances of one index in two epochs (during a
// rescale) are summed.
func (m *metrics) observe(_ context.Context, o metric.Observer) error {
	ref := m.node.Load()
	if ref == nil {
		return nil
	}
	type key struct {
		op    string
		index int
	}
	totals := map[key]*instTotals{}
	var order []key
	for _, op := range ref.Status() {
		for _, in := range op.Instances {
			if in.State == "released" || in.State == "stopped" {
				continue
			}
			k := key{op.Name, in.Index}
			t := totals[k]
			if t == nil {
				t = &instTotals{}
				totals[k] = t
				order = append(order, k)
			}
			t.consumed += in.Processed
			t.produced += in.Produced
			t.restarts += int64(in.Restarts)
			t.deadLetters += in.DeadLetters
			t.transient += in.TransientErrors
			t.queued += in.Queued
			t.stateBytes += in.StateBytes
		}
	}
	for _, k := range order {
		t, a := totals[k], m.instances.get(k.op, k.index).observe
		o.ObserveInt64(m.consumed, t.consumed, a...)
		o.ObserveInt64(m.produced, t.produced, a...)
		o.ObserveInt64(m.restarts, t.restarts, a...)
		o.ObserveInt64(m.deadLetters, t.deadLetters, a...)
		o.ObserveInt64(m.transient, t.transient, a...)
		o.ObserveInt64(m.mailbox, t.queued, a...)
		o.ObserveInt64(m.stateSize, t.stateBytes, a...)
	}
	o.ObserveInt64(m.buffered, ref.Buffered())
	for _, st := range ref.Streams() {
		a := metric.WithAttributeSet(attribute.NewSet(AttrStream.String(st.Stream)))
		o.ObserveInt64(m.dropped, st.Dropped, a)
		o.ObserveInt64(m.held, st.Held, a)
	}
	return nil
}

// instance is what the metrics keep per (operator, index): its attribute
// set, as a measurement option built once, and its latency histograms.
type instance struct {
	attrs    attribute.Set
	observe  []metric.ObserveOption
	process  *histogram
	endToEnd *histogram
	stages   [len(stageMetrics)]*histogram // by status.Stage (stages.go)
}

// instanceCache maps (operator, index) to its instance: a copy-on-write
// map read without locks. Its size is bounded by the instances the node
// ever had: operator names and instance indexes, never keys.
type instanceCache struct {
	m  atomic.Pointer[map[string][]*instance]
	mu sync.Mutex // serialises writers
}

func (c *instanceCache) get(operator string, index int) *instance {
	if p := c.m.Load(); p != nil {
		if s := (*p)[operator]; index >= 0 && index < len(s) && s[index] != nil {
			return s[index]
		}
	}
	return c.add(operator, index)
}

func (c *instanceCache) add(operator string, index int) *instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := map[string][]*instance{}
	if p := c.m.Load(); p != nil {
		old = *p
	}
	if s := old[operator]; index >= 0 && index < len(s) && s[index] != nil {
		return s[index]
	}
	now := time.Now()
	attrs := attribute.NewSet(AttrOperator.String(operator), AttrInstance.Int(index))
	in := &instance{attrs: attrs, observe: []metric.ObserveOption{metric.WithAttributeSet(attrs)},
		process: newHistogram(&processBuckets, now), endToEnd: newHistogram(&endToEndBuckets, now), stages: newStageHistograms(now)}
	if index < 0 {
		return in
	}
	next := make(map[string][]*instance, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	s := make([]*instance, max(index+1, len(old[operator])))
	copy(s, old[operator])
	s[index] = in
	next[operator] = s
	c.m.Store(&next)
	return in
}

// all returns every instance known.
func (c *instanceCache) all() []*instance {
	p := c.m.Load()
	if p == nil {
		return nil
	}
	var out []*instance
	for _, s := range *p {
		for _, in := range s {
			if in != nil {
				out = append(out, in)
			}
		}
	}
	return out
}
