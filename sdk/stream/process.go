package stream

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
)

// Processor is a typed keyed operator: the functions Process calls with
// each value of a key and each timer of a key. Record is required; Timer
// and EventTimer are needed only by stages that set timers of that kind.
// An error (or panic) fails the attempt as in any operator: its state
// writes, timers and emitted values are discarded, it is retried, then
// dead-lettered.
type Processor[K, T, U any] struct {
	// Record is called with each value and its key.
	Record func(ctx *Context[K, U], key K, v T) error
	// Timer is called when a processing-time timer set with
	// Context.SetTimer is due, with the key it was set for and its name.
	Timer func(ctx *Context[K, U], key K, timer string, at time.Time) error
	// EventTimer is called when the watermark reaches an event-time timer
	// set with Context.SetEventTimer.
	EventTimer func(ctx *Context[K, U], key K, timer string, at time.Time) error
}

// Context is handed to a Processor's functions: it emits values to the
// stages after Process, reaches State (state.Value, Map and List take
// ctx.State()) and sets timers for the current key. It is a
// context.Context, done when the instance stops, and valid only during
// the call it was passed to.
type Context[K, U any] struct {
	context.Context
	ctx   sdk.Context
	key   []byte // the current key's bytes
	event time.Time
	emit  func(U) error
	stage string
	op    string
	timer bool // Processor.Timer is set
	etime bool // Processor.EventTimer is set
}

// Emit hands v to the stages after Process (chained ones at once; to
// other operators once the call succeeds, as Produce does).
func (c *Context[K, U]) Emit(v U) error { return c.emit(v) }

// State returns the instance's State, in the current key's key group:
// keep per-key state in a stream.Value, or a state.Map keyed by the key
// (a state.Value is shared by every key of the key group).
func (c *Context[K, U]) State() sdk.State { return c.ctx.State() }

// EventTime returns the event time of the current value, or the due time
// of the current timer.
func (c *Context[K, U]) EventTime() time.Time { return c.event }

// Watermark returns the instance's watermark.
func (c *Context[K, U]) Watermark() time.Time { return c.ctx.Watermark() }

// Instance describes the running instance.
func (c *Context[K, U]) Instance() sdk.InstanceInfo { return c.ctx.Instance() }

// Logger returns the instance's logger.
func (c *Context[K, U]) Logger() *slog.Logger { return c.ctx.Logger() }

// SetTimer sets the processing-time timer of that name for the current
// key (setting it again replaces it); Processor.Timer is called at or
// after at, with the key and name.
func (c *Context[K, U]) SetTimer(timer string, at time.Time) error {
	if !c.timer {
		return c.noTimer("SetTimer", "Timer")
	}
	return c.ctx.SetTimer(c.timerKey(timer), at)
}

// DeleteTimer removes the current key's processing-time timer of that
// name, if set.
func (c *Context[K, U]) DeleteTimer(timer string) error { return c.ctx.DeleteTimer(c.timerKey(timer)) }

// SetEventTimer sets the event-time timer of that name for the current
// key; Processor.EventTimer is called once the watermark reaches at.
func (c *Context[K, U]) SetEventTimer(timer string, at time.Time) error {
	if !c.etime {
		return c.noTimer("SetEventTimer", "EventTimer")
	}
	return c.ctx.SetEventTimer(c.timerKey(timer), at)
}

// DeleteEventTimer removes the current key's event-time timer of that
// name, if set.
func (c *Context[K, U]) DeleteEventTimer(timer string) error {
	return c.ctx.DeleteEventTimer(c.timerKey(timer))
}

// noTimer is the error of a timer set without the function it would call.
func (c *Context[K, U]) noTimer(call, field string) error {
	return fmt.Errorf("stream: operator %q, stage %q: %s with no Processor.%s to call: %w", c.op, c.stage, call, field, ErrNoTimerFunc)
}

// timerKey is the runtime's key of timer for the current key: the name's
// length (uvarint), the name, the key's bytes.
func (c *Context[K, U]) timerKey(timer string) string {
	b := make([]byte, 0, binary.MaxVarintLen64+len(timer)+len(c.key))
	b = binary.AppendUvarint(b, uint64(len(timer)))
	return string(append(append(b, timer...), c.key...))
}

// splitTimerKey returns the timer name and key bytes of a timer key.
func splitTimerKey(k string) (timer string, key []byte, ok bool) {
	n, w := binary.Uvarint([]byte(k[:min(len(k), binary.MaxVarintLen64)]))
	if w <= 0 || uint64(len(k)-w) < n {
		return "", nil, false
	}
	return k[w : w+int(n)], []byte(k[w+int(n):]), true
}

// Process adds a stage running fn over the keyed stream: an operator of
// its own, "<pipeline>.<stage>", reading it with group-by routing, so each
// key's values reach fn in order on one instance, with its state and
// timers in the key's key group. What fn emits is handed on as values of
// type U, encoded with c where they leave the operator; the stateless
// stages after Process chain to it.
func Process[K, T, U any](k *Keyed[K, T], name string, fn Processor[K, T, U], c codec.Codec[U], opts ...Option) *Stream[U] {
	out := newStream(k.st.p, name, kindProcess, k.st, c, opts)
	st := out.st
	st.require(fn.Record != nil, "Processor.Record")
	kc, vc := k.kc, k.vc
	st.operator = func(meta sdk.Metadata, _ string) (sdk.Factory, error) {
		return func() sdk.Operator {
			in := &inst{op: meta.Name}
			o := &processOp[K, T, U]{meta: meta, fn: fn, kc: kc, vc: vc, in: in}
			o.c = Context[K, U]{emit: out.push(in), stage: st.name, op: meta.Name, timer: fn.Timer != nil, etime: fn.EventTimer != nil}
			return o
		}, nil
	}
	return out
}

// processOp is the operator of a Process stage.
type processOp[K, T, U any] struct {
	meta sdk.Metadata
	fn   Processor[K, T, U]
	kc   codec.Codec[K]
	vc   codec.Codec[T]
	in   *inst
	c    Context[K, U]
}

var _ sdk.EventTimerProcessor = (*processOp[string, string, string])(nil)

// Metadata returns what Build planned.
func (o *processOp[K, T, U]) Metadata() sdk.Metadata { return o.meta }

// Init does nothing: state and timers are in the runtime's keeping.
func (o *processOp[K, T, U]) Init(sdk.Context) error { return nil }

// begin points the instance and the Context at the callback under way.
func (o *processOp[K, T, U]) begin(ctx sdk.Context, key []byte, event time.Time) {
	o.in.ctx = ctx
	o.c.Context, o.c.ctx, o.c.key, o.c.event = ctx, ctx, key, event
}

// ProcessRecord decodes rec's key and value and calls Record.
func (o *processOp[K, T, U]) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	o.begin(ctx, rec.Key, rec.EventTime)
	k, err := o.kc.Decode(rec.Key)
	if err != nil {
		return o.in.decodeError(o.c.stage, rec.Stream, fmt.Errorf("key: %w", err))
	}
	v, err := o.vc.Decode(rec.Value)
	if err != nil {
		return o.in.decodeError(o.c.stage, rec.Stream, err)
	}
	return o.fn.Record(&o.c, k, v) // the Processor's error as it is: the dead letter names the operator
}

// ProcessTimer calls Timer.
func (o *processOp[K, T, U]) ProcessTimer(ctx sdk.Context, key string, at time.Time) error {
	return o.timer(ctx, key, at, o.fn.Timer)
}

// ProcessEventTimer calls EventTimer.
func (o *processOp[K, T, U]) ProcessEventTimer(ctx sdk.Context, key string, at time.Time) error {
	return o.timer(ctx, key, at, o.fn.EventTimer)
}

// timer decodes a timer's name and key and calls fn with them.
func (o *processOp[K, T, U]) timer(ctx sdk.Context, tk string, at time.Time, fn func(*Context[K, U], K, string, time.Time) error) error {
	name, kb, ok := splitTimerKey(tk)
	if !ok || fn == nil {
		return fmt.Errorf("stream: operator %q, stage %q: timer %q was not set by the stage", o.meta.Name, o.c.stage, tk)
	}
	o.begin(ctx, kb, at)
	k, err := o.kc.Decode(kb)
	if err != nil {
		return fmt.Errorf("stream: operator %q, stage %q: timer %q: key: %w", o.meta.Name, o.c.stage, name, err)
	}
	return fn(&o.c, k, name, at)
}
