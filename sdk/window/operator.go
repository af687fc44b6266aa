package window

import (
	"bytes"
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

// operator is a window operator. Its state is, under the keys described
// in keys.go, one entry per record key holding its tumbling or hopping
// windows, with one event timer per key (timewin.go), or one entry per
// session, count or global window: the encoded accumulator (count
// windows: the count first). A session has one event timer, at its end
// and then, with lateness, at end+lateness to remove it. The entries it
// owns are also kept decoded in memory (except sessions; see cache.go),
// written through to State.
type operator[A any] struct {
	cfg  Config
	meta sdk.Metadata
	agg  Aggregator[A]
	kc   *cache[*keyWindows[A]] // tumbling and hopping windows
	c    *cache[*cached[A]]     // count and global windows
	buf  []byte                 // an encoded value
	abuf []byte                 // an encoded accumulator
	kbuf []byte                 // a state key
	hbuf []byte                 // result headers
}

// cached is a count or global window's accumulator; n is a count
// window's number of records.
type cached[A any] struct {
	acc A
	n   int64
}

var _ sdk.EventTimerProcessor = (*operator[int64])(nil)

func (o *operator[A]) Metadata() sdk.Metadata { return o.meta }

// Init takes the windows the operator is deployed with (a manifest's
// window mapping may have changed those of the Config) and loads those of
// the instance's key groups into the cache.
func (o *operator[A]) Init(ctx sdk.Context) error {
	if w := ctx.Instance().Window; w != nil {
		if err := w.Validate(); err != nil {
			return fmt.Errorf("window operator %q: deployed %w", o.cfg.Name, err)
		}
		o.cfg = o.cfg.deployed(*w)
	}
	var err error
	switch o.cfg.Windows.kind {
	case kindSession:
		return nil
	case kindTumbling, kindHopping:
		o.kc = newCache[*keyWindows[A]](o.cfg.CacheWindows)
		err = o.kc.load(ctx.State(), tagKeyWindows, func(k, v []byte) (*keyWindows[A], error) {
			return decodeKeyWindows(bytes.Clone(v), o.agg, o.cfg.Lateness) // Decode may keep slices
		})
	default:
		tag := byte(tagCount)
		if o.cfg.Windows.kind == kindGlobal {
			tag = tagGlobal
		}
		o.c = newCache[*cached[A]](o.cfg.CacheWindows)
		err = o.c.load(ctx.State(), tag, func(k, v []byte) (*cached[A], error) {
			return o.decode(bytes.Clone(v))
		})
	}
	if err != nil {
		return fmt.Errorf("window operator %q: load windows: %w", o.cfg.Name, err)
	}
	return nil
}

func (o *operator[A]) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// ProcessRecord adds rec to its windows.
func (o *operator[A]) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	w := o.cfg.Windows
	if w.kind.EventTime() && rec.EventTime.IsZero() {
		return fmt.Errorf("window operator %q (%v): record with key %q from %q: %w: an event-time window needs Record.EventTime set by the source",
			o.cfg.Name, w, rec.Key, rec.Stream, ErrNoEventTime)
	}
	switch w.kind {
	case kindTumbling:
		return o.addTime(ctx, rec, Floor(rec.EventTime, w.size), w.size, w.size)
	case kindHopping:
		return o.addTime(ctx, rec, Floor(rec.EventTime, w.slide), w.size, w.slide)
	case kindSession:
		return o.addSession(ctx, rec)
	case kindCount:
		return o.addCount(ctx, rec)
	}
	return o.addGlobal(ctx, rec)
}

// update adds rec to the global window under k and writes it to State.
// timer is the window's key as a string when it is new (it needs its
// timer), else "". A failure may leave the cached window changed (see
// addTime).
func (o *operator[A]) update(ctx sdk.Context, k []byte, rec sdk.Record) (e *cached[A], timer string, err error) {
	if e, err = o.lookup(ctx, k); err != nil {
		return nil, "", err
	}
	if e == nil {
		e = &cached[A]{acc: o.agg.Zero()}
		timer = o.c.put(k, e)
	}
	if e.acc, err = o.agg.Add(e.acc, rec); err != nil {
		return nil, "", err
	}
	e.n++
	o.write(ctx, k, e.n, e.acc)
	return e, timer, nil
}

// lookup returns the count, global or session window under k, or nil
// when there is none: from the cache, or from State (then cached; session
// windows are not).
func (o *operator[A]) lookup(ctx sdk.Context, k []byte) (*cached[A], error) {
	if o.c != nil {
		if e, ok, known := o.c.get(k); ok || known {
			return e, nil
		}
	}
	v, err := ctx.State().Get(k)
	if errors.Is(err, sdk.ErrNotFound) {
		if o.c != nil {
			o.c.absent(k)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("window operator %q: read window: %w", o.cfg.Name, err)
	}
	e, err := o.decode(v)
	if err != nil {
		return nil, err
	}
	if o.c != nil {
		o.c.put(k, e)
	}
	return e, nil
}

// decode decodes a window's state value (count windows: uvarint count,
// then the accumulator).
func (o *operator[A]) decode(v []byte) (*cached[A], error) {
	e := &cached[A]{}
	if o.cfg.Windows.kind == kindCount {
		n, w := binary.Uvarint(v)
		if w <= 0 {
			return nil, fmt.Errorf("window operator %q: corrupt count window state", o.cfg.Name)
		}
		e.n, v = int64(n), v[w:]
	}
	acc, err := o.agg.Decode(v)
	if err != nil {
		return nil, fmt.Errorf("window operator %q: decode accumulator: %w", o.cfg.Name, err)
	}
	e.acc = acc
	return e, nil
}

// write stores acc (and, for a count window, n first) under k.
func (o *operator[A]) write(ctx sdk.Context, k []byte, n int64, acc A) {
	o.buf = o.buf[:0]
	if o.cfg.Windows.kind == kindCount {
		o.buf = binary.AppendUvarint(o.buf, uint64(n))
	}
	o.buf = o.agg.Encode(o.buf, acc)
	ctx.State().Set(k, o.buf)
}

// remove deletes the window under k.
func (o *operator[A]) remove(ctx sdk.Context, k []byte) {
	ctx.State().Delete(k)
	if o.c != nil {
		o.c.remove(k)
	}
}

// armSession sets the timer of the session whose key is timer: at its
// end, or (already closed, within the lateness) at end+lateness to remove
// it.
func (o *operator[A]) armSession(ctx sdk.Context, timer string, end, wm time.Time) error {
	at := end
	if !wm.Before(end) {
		at = end.Add(o.cfg.Lateness)
	}
	return ctx.SetEventTimer(timer, at)
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
	// Both bounds in one string: one allocation.
	o.hbuf = strconv.AppendInt(o.hbuf[:0], start.UnixNano(), 10)
	n := len(o.hbuf)
	bounds := string(strconv.AppendInt(o.hbuf, end.UnixNano(), 10))
	rec.Headers = append(rec.Headers[:len(rec.Headers):len(rec.Headers)],
		sdk.Header{Key: HeaderStart, Value: bounds[:n]}, sdk.Header{Key: HeaderEnd, Value: bounds[n:]})
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
	if tag == tagKeyWindows {
		return o.timeTimer(ctx, tk, key)
	}
	e, err := o.lookup(ctx, k)
	if err != nil || e == nil {
		return err // none: nothing there (removed meanwhile)
	}
	if tag == tagGlobal {
		o.remove(ctx, k)
		if o.cfg.Emit == OnClose {
			return ctx.Produce(o.cfg.Output, sdk.Record{Key: key, Value: o.agg.Result(e.acc)})
		}
		return nil
	}
	if at.Before(end.Add(o.cfg.Lateness)) || o.cfg.Lateness == 0 && at.Equal(end) {
		// Closing: emit; keep the window for late records until
		// end+lateness.
		if o.cfg.Emit == OnClose {
			if err := o.emitTime(ctx, key, start, end, e.acc); err != nil {
				return err
			}
		}
		if o.cfg.Lateness > 0 {
			return ctx.SetEventTimer(tk, end.Add(o.cfg.Lateness))
		}
	}
	o.remove(ctx, k)
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
	o.write(ctx, k, 0, acc)
	if err := o.armSession(ctx, string(k), end, wm); err != nil {
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
	o.kbuf = appendKeyPrefix(o.kbuf[:0], tagCount, rec.Key)
	k := o.kbuf
	e, err := o.lookup(ctx, k)
	if err != nil {
		return err
	}
	if e == nil {
		e = &cached[A]{acc: o.agg.Zero()}
		o.c.put(k, e)
	}
	if e.acc, err = o.agg.Add(e.acc, rec); err != nil {
		return err
	}
	e.n++
	closing := e.n == o.cfg.Windows.count
	if o.cfg.Emit == OnUpdate || closing {
		if err := ctx.Produce(o.cfg.Output, sdk.Record{Key: rec.Key, Value: o.agg.Result(e.acc)}); err != nil {
			return err
		}
	}
	if closing {
		o.remove(ctx, k)
		return nil
	}
	o.write(ctx, k, e.n, e.acc)
	return nil
}

// addGlobal adds rec to its key's global window, which closes at
// end-of-stream.
func (o *operator[A]) addGlobal(ctx sdk.Context, rec sdk.Record) error {
	o.kbuf = appendKeyPrefix(o.kbuf[:0], tagGlobal, rec.Key)
	e, timer, err := o.update(ctx, o.kbuf, rec)
	if err != nil {
		return err
	}
	if timer != "" {
		if err := ctx.SetEventTimer(timer, EndOfTime); err != nil {
			return err
		}
	}
	if o.cfg.Emit == OnUpdate {
		return ctx.Produce(o.cfg.Output, sdk.Record{Key: rec.Key, Value: o.agg.Result(e.acc)})
	}
	return nil
}
