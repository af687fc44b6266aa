package window

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// ErrNoEventTime is returned (wrapped) for a record without an event time
// reaching an event-time window operator: it fails the record, which the
// runtime retries and then sends to the operator's dead-letter stream
// with the error; it never lands in a wrong window.
var ErrNoEventTime = errors.New("window: record has no event time")

// New checks cfg and returns a factory of the window operator that
// aggregates each window of each record key with agg. Errors name the bad
// field (*ConfigError).
func New[A any](cfg Config, agg Aggregator[A]) (sdk.Factory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if agg == nil {
		return nil, &ConfigError{Operator: cfg.Name, Field: "aggregator", Problem: "must not be nil"}
	}
	meta := cfg.metadata()
	return func() sdk.Operator { return &operator[A]{cfg: cfg, meta: meta, agg: agg} }, nil
}

// operator is a window operator. Its state per window is the encoded
// accumulator (count windows: index and count first), under the keys
// described in keys.go; each event-time window has one event timer, at its
// end and then, with lateness, at end+lateness to remove it.
type operator[A any] struct {
	cfg  Config
	meta sdk.Metadata
	agg  Aggregator[A]
	buf  []byte
}

var _ sdk.EventTimerProcessor = (*operator[int64])(nil)

func (o *operator[A]) Metadata() sdk.Metadata { return o.meta }

func (o *operator[A]) Init(sdk.Context) error { return nil }

func (o *operator[A]) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// ProcessRecord adds rec to its windows.
func (o *operator[A]) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	w := o.cfg.Windows
	if w.kind.eventTime() && rec.EventTime.IsZero() {
		return fmt.Errorf("window operator %q (%v): record with key %q from %q: %w: an event-time window needs Record.EventTime set by the source",
			o.cfg.Name, w, rec.Key, rec.Stream, ErrNoEventTime)
	}
	switch w.kind {
	case kindTumbling:
		return o.addTime(ctx, rec, floorTime(rec.EventTime, w.size), w.size, w.size)
	case kindHopping:
		return o.addTime(ctx, rec, floorTime(rec.EventTime, w.slide), w.size, w.slide)
	case kindSession:
		return o.addSession(ctx, rec)
	case kindCount:
		return o.addCount(ctx, rec)
	}
	return o.addGlobal(ctx, rec)
}

// addTime adds rec to the windows of size starting at last, last−slide, …
// that contain its event time and are not expired; a record for none goes
// to the late stream.
func (o *operator[A]) addTime(ctx sdk.Context, rec sdk.Record, last time.Time, size, slide time.Duration) error {
	wm := ctx.Watermark()
	added := false
	for start := last; start.Add(size).After(rec.EventTime); start = start.Add(-slide) {
		end := start.Add(size)
		if !wm.Before(end.Add(o.cfg.Lateness)) {
			continue // expired: its state is gone
		}
		added = true
		k := windowKey(tagTime, rec.Key, start, end)
		acc, fresh, err := o.update(ctx, k, rec)
		if err != nil {
			return err
		}
		if fresh {
			if err := o.arm(ctx, k, end, wm); err != nil {
				return err
			}
		}
		if o.cfg.Emit == OnUpdate || !wm.Before(end) {
			if err := o.emitTime(ctx, rec.Key, start, end, acc); err != nil {
				return err
			}
		}
	}
	if !added {
		return ctx.Produce(LateStream(o.cfg.Name), rec)
	}
	return nil
}

// update adds rec to the accumulator under k (fresh: there was none).
func (o *operator[A]) update(ctx sdk.Context, k []byte, rec sdk.Record) (acc A, fresh bool, err error) {
	if acc, fresh, err = o.load(ctx, k); err != nil {
		return acc, fresh, err
	}
	if acc, err = o.agg.Add(acc, rec); err != nil {
		return acc, fresh, err
	}
	o.store(ctx, k, acc)
	return acc, fresh, nil
}

// store writes acc under k.
func (o *operator[A]) store(ctx sdk.Context, k []byte, acc A) {
	o.buf = o.agg.Encode(o.buf[:0], acc)
	ctx.State().Set(k, o.buf)
}

// arm sets window k's timer: at its end, or (already closed, within the
// lateness) at end+lateness to remove it.
func (o *operator[A]) arm(ctx sdk.Context, k []byte, end, wm time.Time) error {
	at := end
	if !wm.Before(end) {
		at = end.Add(o.cfg.Lateness)
	}
	return ctx.SetEventTimer(string(k), at)
}

// load reads the accumulator under k, or Zero when there is none.
func (o *operator[A]) load(ctx sdk.Context, k []byte) (acc A, fresh bool, err error) {
	v, err := ctx.State().Get(k)
	if errors.Is(err, sdk.ErrNotFound) {
		return o.agg.Zero(), true, nil
	}
	if err != nil {
		return acc, false, err
	}
	acc, err = o.agg.Decode(v)
	if err != nil {
		return acc, false, fmt.Errorf("window operator %q: decode accumulator: %w", o.cfg.Name, err)
	}
	return acc, false, nil
}

// emitTime produces the result of window [start, end) of key.
func (o *operator[A]) emitTime(ctx sdk.Context, key []byte, start, end time.Time, acc A) error {
	rec := sdk.Record{Key: key, Value: o.agg.Result(acc)}
	if o.cfg.Result != nil {
		rec = o.cfg.Result(rec, start, end)
	}
	if rec.EventTime.IsZero() {
		rec.EventTime = end.Add(-time.Nanosecond)
	}
	rec.Headers = append(rec.Headers[:len(rec.Headers):len(rec.Headers)],
		sdk.Header{Key: HeaderStart, Value: strconv.FormatInt(start.UnixNano(), 10)},
		sdk.Header{Key: HeaderEnd, Value: strconv.FormatInt(end.UnixNano(), 10)})
	return ctx.Produce(o.cfg.Output, rec)
}

// ProcessEventTimer closes a window at its end and removes it at
// end+lateness.
func (o *operator[A]) ProcessEventTimer(ctx sdk.Context, tk string, at time.Time) error {
	k := []byte(tk)
	tag, key, start, end, err := parseKey(k)
	if err != nil {
		return fmt.Errorf("window operator %q: timer %q: %w", o.cfg.Name, tk, err)
	}
	acc, fresh, err := o.load(ctx, k)
	if err != nil || fresh {
		return err // fresh: nothing there (removed meanwhile)
	}
	if tag == tagGlobal {
		ctx.State().Delete(k)
		if o.cfg.Emit == OnClose {
			return ctx.Produce(o.cfg.Output, sdk.Record{Key: key, Value: o.agg.Result(acc)})
		}
		return nil
	}
	if at.Before(end.Add(o.cfg.Lateness)) || o.cfg.Lateness == 0 && at.Equal(end) {
		// Closing: emit; keep the window for late records until
		// end+lateness.
		if o.cfg.Emit == OnClose {
			if err := o.emitTime(ctx, key, start, end, acc); err != nil {
				return err
			}
		}
		if o.cfg.Lateness > 0 {
			return ctx.SetEventTimer(tk, end.Add(o.cfg.Lateness))
		}
	}
	ctx.State().Delete(k)
	return nil
}

// addSession adds rec to its key's session, merging the sessions it
// bridges.
func (o *operator[A]) addSession(ctx sdk.Context, rec sdk.Record) error {
	wm := ctx.Watermark()
	start, end := rec.EventTime, rec.EventTime.Add(o.cfg.Windows.gap)
	type session struct {
		k   []byte
		acc []byte
	}
	var merged []session
	err := ctx.State().Scan(keyPrefix(tagSession, rec.Key), func(k, v []byte) error {
		_, _, s, e, err := parseKey(k)
		if err != nil {
			return err
		}
		if !s.After(end) && !e.Before(start) { // they overlap or touch
			merged = append(merged, session{k: append([]byte(nil), k...), acc: append([]byte(nil), v...)})
			if s.Before(start) {
				start = s
			}
			if e.After(end) {
				end = e
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !wm.Before(end.Add(o.cfg.Lateness)) {
		return ctx.Produce(LateStream(o.cfg.Name), rec)
	}
	acc := o.agg.Zero()
	for _, s := range merged {
		a, err := o.agg.Decode(s.acc)
		if err != nil {
			return fmt.Errorf("window operator %q: decode accumulator: %w", o.cfg.Name, err)
		}
		acc = o.agg.Merge(acc, a)
		ctx.State().Delete(s.k)
		if err := ctx.DeleteEventTimer(string(s.k)); err != nil {
			return err
		}
	}
	if acc, err = o.agg.Add(acc, rec); err != nil {
		return err
	}
	k := windowKey(tagSession, rec.Key, start, end)
	o.store(ctx, k, acc)
	if err := o.arm(ctx, k, end, wm); err != nil {
		return err
	}
	if o.cfg.Emit == OnUpdate || !wm.Before(end) {
		return o.emitTime(ctx, rec.Key, start, end, acc)
	}
	return nil
}

// addCount adds rec to its key's current count window (state: the
// number of records as a uvarint, then the accumulator) and closes it with
// its nth record, removing its state.
func (o *operator[A]) addCount(ctx sdk.Context, rec sdk.Record) error {
	k := keyPrefix(tagCount, rec.Key)
	var n uint64
	acc := o.agg.Zero()
	v, err := ctx.State().Get(k)
	switch {
	case errors.Is(err, sdk.ErrNotFound):
	case err != nil:
		return err
	default:
		var w int
		if n, w = binary.Uvarint(v); w <= 0 {
			return fmt.Errorf("window operator %q: corrupt count window state", o.cfg.Name)
		}
		if acc, err = o.agg.Decode(v[w:]); err != nil {
			return fmt.Errorf("window operator %q: decode accumulator: %w", o.cfg.Name, err)
		}
	}
	if acc, err = o.agg.Add(acc, rec); err != nil {
		return err
	}
	n++
	closing := int64(n) == o.cfg.Windows.count
	if o.cfg.Emit == OnUpdate || closing {
		if err := ctx.Produce(o.cfg.Output, sdk.Record{Key: rec.Key, Value: o.agg.Result(acc)}); err != nil {
			return err
		}
	}
	if closing {
		ctx.State().Delete(k)
		return nil
	}
	o.buf = o.agg.Encode(binary.AppendUvarint(o.buf[:0], n), acc)
	ctx.State().Set(k, o.buf)
	return nil
}

// addGlobal adds rec to its key's global window, which closes at
// end-of-stream.
func (o *operator[A]) addGlobal(ctx sdk.Context, rec sdk.Record) error {
	k := keyPrefix(tagGlobal, rec.Key)
	acc, fresh, err := o.update(ctx, k, rec)
	if err != nil {
		return err
	}
	if fresh {
		if err := ctx.SetEventTimer(string(k), EndOfTime); err != nil {
			return err
		}
	}
	if o.cfg.Emit == OnUpdate {
		return ctx.Produce(o.cfg.Output, sdk.Record{Key: rec.Key, Value: o.agg.Result(acc)})
	}
	return nil
}
