package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/window"
)

// IntervalJoin adds a stage joining two keyed streams on their keys by
// event time (Flink's interval join): each left value l and right value r
// of an equal key whose event times satisfy
//
//	l.time + lower ≤ r.time ≤ l.time + upper
//
// are handed on as join(l, r), encoded with c where they leave the
// operator, once the later of the two has arrived. lower may be negative
// (a right value before the left one); lower ≤ upper.
//
// It is an operator of its own, "<pipeline>.<stage>", reading both keyed
// streams with group-by routing (so a key's values of both sides meet on
// one instance, in its key group); both key codecs must be the same
// codec, so that equal keys have equal bytes. Each side's values are kept
// in State (the record's value bytes, by key and event time) until the
// watermark passes the last time a value of the other side could still
// join them — l.time + upper for a left value, r.time − lower for a right
// one — when an event-time timer removes them; so the sources must give
// records event times and watermarks. A value whose event time is before
// the instance's watermark is late: it joins nothing and goes, as the
// record it arrived as, to "<pipeline>.<stage>.late", as Aggregate's late
// values do. A joined value's record has the event time of the record
// whose arrival made it. The stateless stages after it chain to it.
func IntervalJoin[K, L, R, O any](left *Keyed[K, L], right *Keyed[K, R], name string, lower, upper time.Duration, join func(L, R) O, c codec.Codec[O], opts ...Option) *Stream[O] {
	out := newJoin(left, right, name, kindIntervalJoin, join, c, opts, joinHow{lower: lower, upper: upper})
	if lower > upper {
		out.st.p.fail(out.st, ErrInvalid, fmt.Sprintf("lower bound %v is after upper bound %v: want lower ≤ upper", lower, upper))
	}
	return out
}

// WindowJoin adds a stage joining two keyed streams on their keys by
// window (Flink's window join): each left value l and right value r of an
// equal key in the same window of w (window.Tumbling or window.Hopping)
// are handed on as join(l, r), encoded with c where they leave the
// operator, when the window closes: when the watermark reaches its end,
// every pair of the window (left values in arrival order, each with every
// right value in arrival order), in a record whose event time is the
// window's end. A value goes to every window that contains its event time
// and is not closed yet; one for which all of them have closed is late
// and goes, as the record it arrived as, to "<pipeline>.<stage>.late", as
// Aggregate's late values do.
//
// It is an operator of its own, "<pipeline>.<stage>", reading both keyed
// streams with group-by routing, both key codecs the same; the values of
// each open window are kept in State (the record's value bytes) and an
// event-time timer per key and window end emits and removes them. The
// stateless stages after it chain to it.
func WindowJoin[K, L, R, O any](left *Keyed[K, L], right *Keyed[K, R], name string, w window.Windows, join func(L, R) O, c codec.Codec[O], opts ...Option) *Stream[O] {
	size, slide, ok := w.Fixed()
	out := newJoin(left, right, name, kindWindowJoin, join, c, opts, joinHow{size: size, slide: slide})
	switch {
	case !ok:
		out.st.p.fail(out.st, ErrInvalid, fmt.Sprintf("windows %v: a window join takes window.Tumbling or window.Hopping", w))
	case size <= 0 || slide <= 0 || slide > size:
		out.st.p.fail(out.st, ErrInvalid, fmt.Sprintf("windows %v: want size > 0 and 0 < slide ≤ size", w))
	}
	return out
}

// joinHow is what a join stage matches: interval bounds, or windows.
type joinHow struct {
	window       bool
	lower, upper time.Duration // IntervalJoin
	size, slide  time.Duration // WindowJoin
}

// newJoin adds a join stage of kind k reading left and right.
func newJoin[K, L, R, O any](left *Keyed[K, L], right *Keyed[K, R], name string, k kind, join func(L, R) O, c codec.Codec[O], opts []Option, how joinHow) *Stream[O] {
	p := left.st.p
	out := newStream(p, name, k, left.st, c, opts)
	st := out.st
	st.require(join != nil, "the join function")
	switch {
	case right.st.p != p:
		p.fail(st, ErrInvalid, fmt.Sprintf("its right input is a stage of pipeline %q", right.st.p.name))
	case right.st == left.st:
		p.fail(st, ErrInvalid, fmt.Sprintf("joins stage %q with itself: key the stream twice (two KeyBy stages) to join it with itself", left.st.name))
	case left.kc.Name != right.kc.Name:
		p.fail(st, ErrInvalid, fmt.Sprintf("left keys are encoded with codec %q, right keys with %q: use one codec, so that equal keys have equal bytes", left.kc.Name, right.kc.Name))
	default:
		st.in2 = right.st
		right.st.outs = append(right.st.outs, st)
	}
	how.window = k == kindWindowJoin
	lc, rc := left.vc, right.vc
	st.operator = func(meta sdk.Metadata, _ string) (sdk.Factory, error) {
		late := window.LateStream(meta.Name)
		meta.Outputs = slices.Concat(meta.Outputs, []string{late})
		return func() sdk.Operator {
			in := &inst{op: meta.Name}
			return &joinOp[L, R, O]{meta: meta, in: in, how: how, lc: lc, rc: rc, join: join, emit: out.push(in),
				stage: st.name, left: meta.Inputs[0].Stream, late: late}
		}, nil
	}
	return out
}

// State keys and event-timer keys of a join:
//
//	interval state: 'i' | side | uvarint(len key) | key | time
//	interval timer: 'i' | side | time | key        (removes that entry)
//	window state:   'w' | uvarint(len key) | key | end | side
//	window timer:   'w' | end | key                (emits and removes both sides' entries)
//
// side is 'L' or 'R'; time and end are Unix nanoseconds with the sign bit
// flipped, 8 bytes big-endian, so a key's entries sort by time. An entry
// holds the value bytes of the side's records at that key and time (or
// window), each as uvarint(len) | bytes, in arrival order.
const (
	tagInterval = 'i'
	tagWindow   = 'w'
	sideLeft    = 'L'
	sideRight   = 'R'
)

// Errors of a join's State and timers.
var (
	errCorruptJoin = errors.New("stream: corrupt join state or timer key")
	errStopScan    = errors.New("stream: scan done") // ends a Scan early; never returned
)

// joinOp is the operator of an IntervalJoin or WindowJoin stage.
type joinOp[L, R, O any] struct {
	meta  sdk.Metadata
	in    *inst
	how   joinHow
	lc    codec.Codec[L]
	rc    codec.Codec[R]
	join  func(L, R) O
	emit  func(O) error
	stage string
	left  string // the left input's stream; the other one is the right's
	late  string
	kbuf  []byte
}

var _ sdk.EventTimerProcessor = (*joinOp[string, string, string])(nil)

// Metadata returns what Build planned, with the late stream.
func (o *joinOp[L, R, O]) Metadata() sdk.Metadata { return o.meta }

// Init does nothing: the sides' values and timers are in the runtime's
// keeping.
func (o *joinOp[L, R, O]) Init(sdk.Context) error { return nil }

// ProcessTimer does nothing: a join sets event-time timers only.
func (o *joinOp[L, R, O]) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// ProcessRecord decodes rec's value (a value that does not decode is
// dead-lettered before it is kept), joins it with the other side's values
// kept (interval join) and keeps it for the other side's values to come.
func (o *joinOp[L, R, O]) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	o.in.ctx = ctx
	if rec.EventTime.IsZero() {
		return badRecord{fmt.Errorf("stream: operator %q, stage %q: record with key %q from %q: %w: a join needs Record.EventTime set by the source",
			o.meta.Name, o.stage, rec.Key, rec.Stream, window.ErrNoEventTime)}
	}
	if rec.Stream == o.left {
		l, err := o.lc.Decode(rec.Value)
		if err != nil {
			return o.in.decodeError(o.stage, rec.Stream, err)
		}
		return o.add(ctx, rec, sideLeft, func(b []byte) error {
			r, err := o.rc.Decode(b)
			if err != nil {
				return fmt.Errorf("stream: operator %q, stage %q: kept right value: %w", o.meta.Name, o.stage, err)
			}
			return o.emit(o.join(l, r))
		})
	}
	r, err := o.rc.Decode(rec.Value)
	if err != nil {
		return o.in.decodeError(o.stage, rec.Stream, err)
	}
	return o.add(ctx, rec, sideRight, func(b []byte) error {
		l, err := o.lc.Decode(b)
		if err != nil {
			return fmt.Errorf("stream: operator %q, stage %q: kept left value: %w", o.meta.Name, o.stage, err)
		}
		return o.emit(o.join(l, r))
	})
}

// add handles a record of side whose value decoded; match joins the
// value with a kept value of the other side.
func (o *joinOp[L, R, O]) add(ctx sdk.Context, rec sdk.Record, side byte, match func(other []byte) error) error {
	if o.how.window {
		return o.addWindows(ctx, rec, side)
	}
	t, wm := rec.EventTime, ctx.Watermark()
	if t.Before(wm) {
		return ctx.Produce(o.late, rec)
	}
	// The other side's times this value joins.
	lo, hi, other := t.Add(o.how.lower), t.Add(o.how.upper), byte(sideRight)
	if side == sideRight {
		lo, hi, other = t.Add(-o.how.upper), t.Add(-o.how.lower), sideLeft
	}
	prefix := appendJoinPrefix(o.kbuf[:0], tagInterval, other, rec.Key)
	o.kbuf = prefix
	loN, hiN := lo.UnixNano(), hi.UnixNano()
	err := ctx.State().Scan(prefix, func(k, v []byte) error {
		if len(k) != len(prefix)+8 {
			return errCorruptJoin
		}
		at := decodeTime(k[len(prefix):])
		switch {
		case at < loN:
			return nil
		case at > hiN:
			return errStopScan
		}
		return eachValue(v, match)
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return err
	}
	if hi.Before(wm) {
		return nil // no value of the other side to come can join it
	}
	// Kept until the watermark passes hi, the last time of the other
	// side it joins: the timer fires once the watermark reaches hi+1ns.
	key := binary.BigEndian.AppendUint64(appendJoinPrefix(nil, tagInterval, side, rec.Key), encodeTime(t.UnixNano()))
	if err := appendValue(ctx.State(), key, rec.Value); err != nil {
		return err
	}
	tk := binary.BigEndian.AppendUint64([]byte{tagInterval, side}, encodeTime(t.UnixNano()))
	return ctx.SetEventTimer(string(append(tk, rec.Key...)), hi.Add(time.Nanosecond))
}

// addWindows keeps a record of side in each window of its key that
// contains its event time and is not closed yet, or sends it to the late
// stream when there is none.
func (o *joinOp[L, R, O]) addWindows(ctx sdk.Context, rec sdk.Record, side byte) error {
	t, wm := rec.EventTime, ctx.Watermark()
	size, slide := o.how.size, o.how.slide
	kept := false
	for start := window.Floor(t, slide); start.Add(size).After(t); start = start.Add(-slide) {
		end := start.Add(size)
		if !wm.Before(end) {
			continue // closed: its pairs were emitted
		}
		kept = true
		e := encodeTime(end.UnixNano())
		key := append(binary.BigEndian.AppendUint64(appendJoinPrefix(o.kbuf[:0], tagWindow, 0, rec.Key), e), side)
		o.kbuf = key
		if err := appendValue(ctx.State(), key, rec.Value); err != nil {
			return err
		}
		tk := binary.BigEndian.AppendUint64([]byte{tagWindow}, e)
		if err := ctx.SetEventTimer(string(append(tk, rec.Key...)), end); err != nil {
			return err
		}
	}
	if !kept {
		return ctx.Produce(o.late, rec)
	}
	return nil
}

// ProcessEventTimer removes an interval join's expired entry, or emits a
// closed window's pairs and removes its entries.
func (o *joinOp[L, R, O]) ProcessEventTimer(ctx sdk.Context, tk string, at time.Time) error {
	o.in.ctx = ctx
	b := []byte(tk)
	switch {
	case len(b) >= 10 && b[0] == tagInterval && (b[1] == sideLeft || b[1] == sideRight):
		key := appendJoinPrefix(o.kbuf[:0], tagInterval, b[1], b[10:])
		o.kbuf = append(key, b[2:10]...)
		ctx.State().Delete(o.kbuf)
		return nil
	case len(b) >= 9 && b[0] == tagWindow:
		return o.closeWindow(ctx, b[9:], b[1:9])
	}
	return fmt.Errorf("stream: operator %q, stage %q: timer %q: %w", o.meta.Name, o.stage, tk, errCorruptJoin)
}

// closeWindow emits every pair of the window of key that ends at end (8
// bytes, encodeTime) and removes its entries.
func (o *joinOp[L, R, O]) closeWindow(ctx sdk.Context, key, end []byte) error {
	s := ctx.State()
	lk := append(append(appendJoinPrefix(nil, tagWindow, 0, key), end...), sideLeft)
	rk := append(slices.Clip(lk[:len(lk)-1]), sideRight)
	lv, lerr := s.Get(lk)
	rv, rerr := s.Get(rk)
	for _, err := range []error{lerr, rerr} {
		if err != nil && !errors.Is(err, sdk.ErrNotFound) {
			return err
		}
	}
	s.Delete(lk)
	s.Delete(rk)
	if lerr != nil || rerr != nil {
		return nil // one side is empty: no pair
	}
	var rs []R
	if err := eachValue(rv, func(b []byte) error {
		r, err := o.rc.Decode(b)
		rs = append(rs, r)
		return err
	}); err != nil {
		return fmt.Errorf("stream: operator %q, stage %q: kept right value: %w", o.meta.Name, o.stage, err)
	}
	return eachValue(lv, func(b []byte) error {
		l, err := o.lc.Decode(b)
		if err != nil {
			return fmt.Errorf("stream: operator %q, stage %q: kept left value: %w", o.meta.Name, o.stage, err)
		}
		for _, r := range rs {
			if err := o.emit(o.join(l, r)); err != nil {
				return err
			}
		}
		return nil
	})
}

// appendJoinPrefix appends tag [| side] | uvarint(len key) | key to dst
// (side 0: none).
func appendJoinPrefix(dst []byte, tag, side byte, key []byte) []byte {
	dst = append(dst, tag)
	if side != 0 {
		dst = append(dst, side)
	}
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	return append(dst, key...)
}

// encodeTime returns Unix nanoseconds with the sign bit flipped, which
// sort as the times do when written big-endian.
func encodeTime(ns int64) uint64 { return uint64(ns) ^ 1<<63 }

// decodeTime reverses encodeTime of 8 big-endian bytes.
func decodeTime(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ 1<<63) }

// appendValue adds v to the values kept under key.
func appendValue(s sdk.State, key, v []byte) error {
	old, err := s.Get(key)
	if err != nil && !errors.Is(err, sdk.ErrNotFound) {
		return err
	}
	b := make([]byte, 0, len(old)+binary.MaxVarintLen32+len(v))
	b = binary.AppendUvarint(append(b, old...), uint64(len(v)))
	b = append(b, v...)
	if os, ok := s.(sdk.OwnedSetter); ok {
		os.SetOwned(key, b)
	} else {
		s.Set(key, b)
	}
	return nil
}

// eachValue calls fn with each value of an entry appendValue wrote.
func eachValue(b []byte, fn func([]byte) error) error {
	for len(b) > 0 {
		n, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < n {
			return errCorruptJoin
		}
		if err := fn(b[w : w+int(n)]); err != nil {
			return err
		}
		b = b[w+int(n):]
	}
	return nil
}
