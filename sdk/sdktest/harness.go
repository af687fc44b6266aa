package sdktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/placement"
	"github.com/sluicehq/sluice/sdk"
)

// EndOfTime is the watermark after End: it passes every event time (the
// runtime's watermark after end-of-stream).
var EndOfTime = time.Unix(0, math.MaxInt64)

// Start is the processing time a Harness starts at unless WithTime says
// otherwise.
var Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Option configures a Harness.
type Option func(*options)

type options struct {
	index     int
	now       time.Time
	guarantee sdk.Guarantee
	logger    *slog.Logger
	par       int        // WithParallelism; 0: the Metadata's
	restore   []Snapshot // WithSnapshot
}

// WithInstance makes the harness run instance index of the operator's
// Parallelism (default 0): it owns that instance's key groups.
func WithInstance(index int) Option { return func(o *options) { o.index = index } }

// WithTime sets the processing time the harness starts at (default Start).
func WithTime(t time.Time) Option { return func(o *options) { o.now = t } }

// WithGuarantee sets the guarantee reported by Context.Instance (default
// exactly-once).
func WithGuarantee(g sdk.Guarantee) Option { return func(o *options) { o.guarantee = g } }

// WithLogger sets the operator's logger (default: discards everything).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Produced is one record an operator produced, with the stream it went to.
type Produced struct {
	Stream string
	Record sdk.Record
}

// Harness runs one operator instance in memory. Its methods run the
// operator's callbacks synchronously on the caller's goroutine; a Harness
// is not safe for concurrent use.
type Harness struct {
	factory sdk.Factory
	op      sdk.Operator
	meta    sdk.Metadata
	info    sdk.InstanceInfo
	inputs  map[string]sdk.Routing
	outputs map[string]bool
	logger  *slog.Logger
	ctx     context.Context
	cancel  context.CancelFunc

	state   groupMap[[]byte]
	timers  groupMap[time.Time]
	etimers groupMap[time.Time]

	out     map[string][]sdk.Record // committed outputs per stream, not yet taken
	log     []Produced              // committed outputs in order, for a Graph
	pending []Produced              // the current attempt's outputs

	now, wm  time.Time
	maxEvent time.Time // a source's largest event time produced
	ended    bool      // End was called
	finished bool      // a source's Poll returned ErrEndOfStream
	group    int       // the current attempt's key group
	event    time.Time
	restarts int
	closed   bool
	keepLog  bool // a Graph reads log

	checkpoints map[uint64]*Snapshot // taken by Checkpoint
	lastID      uint64               // the newest checkpoint id taken or restored
	completed   uint64               // the newest checkpoint Complete was called for
	dead        []sdk.Operator       // operators of crashed incarnations (Crash), closed by Close
}

// New creates the operator with factory, validates its Metadata as the
// runtime does at deploy time, and runs Init. When Init fails (twice: a
// failure restarts the operator, as in the runtime) the operator is closed
// and New returns the errors of both, and of Close if it failed. The harness runs instance 0
// unless WithInstance says otherwise.
func New(factory sdk.Factory, opts ...Option) (*Harness, error) {
	o := options{now: Start}
	for _, f := range opts {
		f(&o)
	}
	op := factory()
	meta := op.Metadata()
	if o.par > 0 {
		meta.Parallelism = o.par
	}
	meta = meta.WithDefaults()
	if err := meta.Validate(); err != nil {
		return nil, fmt.Errorf("sdktest: %w", err)
	}
	if o.index < 0 || o.index >= meta.Parallelism {
		return nil, fmt.Errorf("sdktest: operator %q: instance %d out of range [0, %d)", meta.Name, o.index, meta.Parallelism)
	}
	lo, hi := placement.GroupRange(o.index, meta.KeyGroups, meta.Parallelism)
	if o.logger == nil {
		o.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h := &Harness{
		factory: factory, op: op, meta: meta,
		info: sdk.InstanceInfo{Operator: meta.Name, Index: o.index, Parallelism: meta.Parallelism, Node: "sdktest",
			KeyGroups: meta.KeyGroups, FirstGroup: lo, EndGroup: hi, Guarantee: o.guarantee, Window: meta.Window},
		inputs: map[string]sdk.Routing{}, outputs: map[string]bool{},
		logger: o.logger.With("operator", meta.Name, "instance", o.index),
		state:  newGroupMap[[]byte](), timers: newGroupMap[time.Time](), etimers: newGroupMap[time.Time](),
		out: map[string][]sdk.Record{}, now: o.now, checkpoints: map[uint64]*Snapshot{},
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	for _, in := range meta.Inputs {
		h.inputs[in.Stream] = in.Routing
	}
	h.outputs[sdk.DeadLetterStream(meta.Name)] = true // as the runtime's instances allow
	for _, s := range meta.Outputs {
		h.outputs[s] = true
	}
	id, err := h.restoreSnapshots(o.restore)
	if err != nil {
		h.cancel()
		return nil, err
	}
	if err := h.attempt(lo, time.Time{}, func() error { return h.op.Init(h.context()) }); err != nil {
		err = fmt.Errorf("sdktest: operator %q: init: %w", meta.Name, err)
		if cerr := h.Close(); cerr != nil { // the runtime closes a failed incarnation too
			err = errors.Join(err, fmt.Errorf("sdktest: operator %q: close after the failed init: %w", meta.Name, cerr))
		}
		return nil, err
	}
	if id > 0 {
		if err := h.commit(id); err != nil {
			return h, err
		}
	}
	return h, nil
}

// Metadata returns the operator's metadata with defaults filled in.
func (h *Harness) Metadata() sdk.Metadata { return h.meta }

// Instance returns what Context.Instance reports.
func (h *Harness) Instance() sdk.InstanceInfo { return h.info }

// Now returns the harness's processing time.
func (h *Harness) Now() time.Time { return h.now }

// Watermark returns the instance's watermark (zero before any).
func (h *Harness) Watermark() time.Time { return h.wm }

// Restarts returns how many times a failed callback restarted the
// operator.
func (h *Harness) Restarts() int { return h.restarts }

// Finished reports whether a source's Poll returned sdk.ErrEndOfStream.
func (h *Harness) Finished() bool { return h.finished }

// Send processes recs, in order, as records arriving on input stream. It
// stops at the first failing record and returns its error; that record's
// effects are discarded and the operator restarted, the records before it
// keep theirs. A record the operator refuses as bad (an error wrapping
// sdk.ErrBadRecord) is handled as the runtime does: its effects are
// discarded, the operator is not restarted, the record goes to the
// dead-letter stream (sdk.DeadLetterStream) with the runtime's headers
// (sluice-error, sluice-attempts 1, sluice-operator, sluice-instance,
// sluice-stream), and Send goes on with the next records; it returns the
// bad records' errors.
func (h *Harness) Send(stream string, recs ...sdk.Record) error {
	routing, ok := h.inputs[stream]
	if !ok {
		return fmt.Errorf("sdktest: operator %q does not read stream %q (inputs: %v)", h.meta.Name, stream, h.meta.Inputs)
	}
	if h.ended {
		return fmt.Errorf("sdktest: operator %q: send to %q after End", h.meta.Name, stream)
	}
	var bad []error
	for _, rec := range recs {
		rec.Stream = stream
		group := h.info.FirstGroup
		if routing == sdk.GroupBy {
			group = placement.KeyGroup(rec.Key, h.meta.KeyGroups)
		}
		err := h.try(group, rec.EventTime, func() error { return h.op.ProcessRecord(h.context(), rec) })
		switch {
		case err == nil:
		case errors.Is(err, sdk.ErrBadRecord) && !h.closed:
			h.deadLetter(rec, err)
			bad = append(bad, err)
		case h.closed:
			return errors.Join(append(bad, err)...)
		default:
			return errors.Join(append(bad, err, h.restart())...)
		}
	}
	return errors.Join(bad...)
}

// deadLetter sends rec, refused as bad with err, to the operator's
// dead-letter stream as the runtime does.
func (h *Harness) deadLetter(rec sdk.Record, err error) {
	dl := rec
	dl.Headers = append(slices.Clone(rec.Headers),
		sdk.Header{Key: sdk.HeaderError, Value: err.Error()},
		sdk.Header{Key: sdk.HeaderAttempts, Value: "1"},
		sdk.Header{Key: sdk.HeaderOperator, Value: h.meta.Name},
		sdk.Header{Key: sdk.HeaderInstance, Value: strconv.Itoa(h.info.Index)},
		sdk.Header{Key: sdk.HeaderStream, Value: rec.Stream})
	stream := sdk.DeadLetterStream(h.meta.Name)
	h.out[stream] = append(h.out[stream], dl)
	if h.keepLog {
		h.log = append(h.log, Produced{Stream: stream, Record: dl})
	}
}

// Poll calls the source's Poll once, with the harness's processing time as
// the event time of records produced without one. A Poll error wrapping
// sdk.ErrTransient is not a failure, as in the runtime: what the Poll
// produced and wrote is kept, the operator is not restarted (the runtime
// polls again after a backoff) and the error is returned. A Poll that returns
// sdk.ErrEndOfStream keeps its records and finishes the source: its
// watermark goes to EndOfTime (its event timers fire) and the error is
// returned so the test sees it.
//
// A source with Metadata.Watermarks or a sdk.WatermarkGenerator raises its
// watermark after every successful Poll (the largest event time produced
// so far minus OutOfOrderness, or what CurrentWatermark returns; never
// backwards) and fires its event timers, as the runtime does; the
// strategy's Interval and Idleness, which are about processing time, do
// not apply here.
func (h *Harness) Poll() error {
	src, ok := h.op.(sdk.Source)
	if !ok {
		return fmt.Errorf("sdktest: operator %q is not a source", h.meta.Name)
	}
	if h.finished {
		return fmt.Errorf("sdktest: operator %q: poll after end of stream: %w", h.meta.Name, sdk.ErrEndOfStream)
	}
	var eos, transient error
	var generated time.Time
	pollMax := h.maxEvent
	err := h.attempt(h.info.FirstGroup, h.now, func() error {
		err := src.Poll(h.context())
		switch {
		case errors.Is(err, sdk.ErrEndOfStream):
			eos, err = err, nil
		case errors.Is(err, sdk.ErrTransient):
			transient = err
			return nil // kept, not a failure
		}
		if err != nil {
			return err
		}
		for _, p := range h.pending {
			if p.Record.EventTime.After(pollMax) {
				pollMax = p.Record.EventTime
			}
		}
		if g, ok := h.op.(sdk.WatermarkGenerator); ok {
			generated = g.CurrentWatermark(h.context())
		}
		return nil
	})
	if err != nil {
		return err
	}
	if transient != nil {
		return transient
	}
	h.maxEvent = pollMax
	if eos != nil {
		h.finished = true
		if err := h.AdvanceWatermark(EndOfTime); err != nil {
			return err
		}
		return eos
	}
	wm := generated
	if _, custom := h.op.(sdk.WatermarkGenerator); !custom && h.meta.Watermarks != nil && !h.maxEvent.IsZero() {
		wm = h.maxEvent.Add(-h.meta.Watermarks.OutOfOrderness)
	}
	if wm.After(h.wm) {
		return h.AdvanceWatermark(wm)
	}
	return nil
}

// AdvanceTime moves processing time forward by d and fires the
// processing-time timers now due; see SetTime.
func (h *Harness) AdvanceTime(d time.Duration) error { return h.SetTime(h.now.Add(d)) }

// SetTime sets processing time to t (it never goes back: an earlier t only
// fires what is due) and fires every SetTimer timer due at or before it, in
// order of due time (then key group, then key), each in the key group it
// was set in. A timer a callback sets that is due by t fires too. A failing
// timer stays pending; its error is returned.
func (h *Harness) SetTime(t time.Time) error {
	if t.After(h.now) {
		h.now = t
	}
	return h.fire(&h.timers, h.now, func(t Timer) error { return h.op.ProcessTimer(h.context(), t.Key, t.At) })
}

// AdvanceWatermark sets the instance's watermark to wm and fires every
// event-time timer due at or before it (ProcessEventTimer), in order of
// due time (then key group, then key). A watermark that goes back is an
// error. A failing timer stays pending; its error is returned.
func (h *Harness) AdvanceWatermark(wm time.Time) error {
	if wm.Before(h.wm) {
		return fmt.Errorf("sdktest: operator %q: watermark goes back from %v to %v", h.meta.Name, h.wm, wm)
	}
	h.wm = wm
	return h.fireEvent()
}

// End ends the input (end-of-stream on every input): the watermark goes to
// EndOfTime, so every event-time timer fires, and Send fails afterwards.
func (h *Harness) End() error {
	h.ended = true
	return h.AdvanceWatermark(EndOfTime)
}

func (h *Harness) fireEvent() error {
	p, ok := h.op.(sdk.EventTimerProcessor)
	if !ok {
		return nil
	}
	return h.fire(&h.etimers, h.wm, func(t Timer) error { return p.ProcessEventTimer(h.context(), t.Key, t.At) })
}

// fire runs the timers of m due by until, earliest first, until none is.
func (h *Harness) fire(m *groupMap[time.Time], until time.Time, call func(Timer) error) error {
	for {
		due := dueTimers(m, until)
		if len(due) == 0 {
			return nil
		}
		for _, t := range due {
			if at, ok := m.get(t.Group, t.Key); !ok || !at.Equal(t.At) {
				continue // changed by an earlier timer
			}
			err := h.attempt(t.Group, t.At, func() error {
				m.delete(t.Group, t.Key) // a callback may set it again
				return call(t)
			})
			if err != nil {
				return err
			}
		}
	}
}

// dueTimers returns the timers of m due by until, in firing order.
func dueTimers(m *groupMap[time.Time], until time.Time) []Timer {
	var due []Timer
	for g, ks := range m.data {
		for k, at := range ks {
			if !at.After(until) {
				due = append(due, Timer{Group: g, Key: k, At: at})
			}
		}
	}
	slices.SortFunc(due, compareTimers)
	return due
}

// attempt runs fn as one callback in key group group with event time
// event: on success its changes are committed, on an error or panic they
// are rolled back and the operator restarted.
func (h *Harness) attempt(group int, event time.Time, fn func() error) error {
	if err := h.try(group, event, fn); err != nil {
		if h.closed {
			return err
		}
		return errors.Join(err, h.restart())
	}
	return nil
}

// try runs fn as one callback in key group group with event time event:
// on success its changes are committed, on an error or panic they are
// rolled back (the operator is not restarted: see attempt).
func (h *Harness) try(group int, event time.Time, fn func() error) error {
	if h.closed {
		return fmt.Errorf("sdktest: operator %q: harness closed", h.meta.Name)
	}
	h.group, h.event, h.pending = group, event, h.pending[:0]
	err := call(fn)
	if err == nil {
		h.state.commit()
		h.timers.commit()
		h.etimers.commit()
		for _, p := range h.pending {
			h.out[p.Stream] = append(h.out[p.Stream], p.Record)
			if h.keepLog {
				h.log = append(h.log, p)
			}
		}
		h.pending = h.pending[:0]
		return nil
	}
	h.state.rollback()
	h.timers.rollback()
	h.etimers.rollback()
	h.pending = h.pending[:0]
	return err
}

// restart replaces the operator with a fresh one from the factory and runs
// Init, as the runtime does after a failure.
func (h *Harness) restart() error {
	h.restarts++
	if c, ok := h.op.(sdk.Closer); ok {
		_ = call(func() error { return c.Close(h.context()) })
	}
	h.op = h.factory()
	h.group, h.event, h.pending = h.info.FirstGroup, time.Time{}, h.pending[:0]
	if err := call(func() error { return h.op.Init(h.context()) }); err != nil {
		h.state.rollback()
		h.timers.rollback()
		h.etimers.rollback()
		h.pending = h.pending[:0]
		return fmt.Errorf("sdktest: operator %q: init after restart: %w", h.meta.Name, err)
	}
	h.state.commit()
	h.timers.commit()
	h.etimers.commit()
	return nil
}

// call runs fn, turning a panic into an error.
func call(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn()
}

// Output returns the records produced to stream and not yet taken, in
// order. The slice is the harness's; use Take to consume them.
func (h *Harness) Output(stream string) []sdk.Record { return h.out[stream] }

// Take returns the records produced to stream and not yet taken, and
// forgets them.
func (h *Harness) Take(stream string) []sdk.Record {
	r := h.out[stream]
	delete(h.out, stream)
	return r
}

// takeLog returns and forgets the outputs in production order (Graph).
func (h *Harness) takeLog() []Produced {
	l := h.log
	h.log = nil
	for s := range h.out {
		delete(h.out, s)
	}
	return l
}

// Get reads state key in the key group of groupKey (the record key the
// state was written under, for group-by inputs).
func (h *Harness) Get(groupKey, key []byte) ([]byte, bool) {
	v, ok := h.state.get(placement.KeyGroup(groupKey, h.meta.KeyGroups), string(key))
	return bytes.Clone(v), ok
}

// GetInGroup reads state key in key group group.
func (h *Harness) GetInGroup(group int, key []byte) ([]byte, bool) {
	v, ok := h.state.get(group, string(key))
	return bytes.Clone(v), ok
}

// State returns every state entry, in order of key group, then key.
func (h *Harness) State() []Entry { return entries(&h.state) }

// Timers returns the pending processing-time timers, earliest first.
func (h *Harness) Timers() []Timer { return timers(&h.timers) }

// EventTimers returns the pending event-time timers, earliest first.
func (h *Harness) EventTimers() []Timer { return timers(&h.etimers) }

// Close calls the operator's Close (if it is an sdk.Closer) and ends the
// harness; later calls fail. It also closes the operators Crash left
// behind, releasing their resources as the kernel does a dead process's.
func (h *Harness) Close() error {
	if h.closed {
		return nil
	}
	var err error
	if c, ok := h.op.(sdk.Closer); ok {
		err = call(func() error { return c.Close(h.context()) })
	}
	for _, dead := range h.dead {
		if c, ok := dead.(sdk.Closer); ok {
			_ = call(func() error { return c.Close(h.context()) })
		}
	}
	h.closed = true
	h.cancel()
	return err
}
