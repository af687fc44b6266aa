package window

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// keyWindows is one record key's open tumbling or hopping windows, by
// start: one State entry and one event timer per key (see keys.go), so
// that a record added to several hopping windows writes State once, and
// the windows of a key that close at once are handled by one timer.
//
// Invariant (after every successful callback, and so in State and in
// every checkpoint): the key's timer is set at deadline(), the earliest
// end of a window not closed yet or end+lateness of a closed one.
type keyWindows[A any] struct {
	wins  []timeWindow[A]
	armed int64 // the timer's time (Unix ns); noTimer when none is set
}

// noTimer is keyWindows.armed when no timer is set.
const noTimer = math.MaxInt64

// timeWindow is window [start, end) (Unix ns) and its accumulator; closed
// says its result was produced at its end (it stays for late records
// until end+lateness).
type timeWindow[A any] struct {
	start, end int64
	closed     bool
	acc        A
}

// find returns the index of window [start, end), or -1.
func (kw *keyWindows[A]) find(start, end int64) int {
	for j := range kw.wins {
		if kw.wins[j].start == start && kw.wins[j].end == end {
			return j
		}
	}
	return -1
}

// insert adds w, in start order, and returns its index.
func (kw *keyWindows[A]) insert(w timeWindow[A]) int {
	j := len(kw.wins)
	for j > 0 && kw.wins[j-1].start > w.start {
		j--
	}
	var zero timeWindow[A]
	kw.wins = append(kw.wins, zero)
	copy(kw.wins[j+1:], kw.wins[j:])
	kw.wins[j] = w
	return j
}

// deadline returns when the key's timer must fire (Unix ns): the earliest
// end of an open window, or end+lateness of a closed one; noTimer when
// there is no window.
func (kw *keyWindows[A]) deadline(lateness time.Duration) int64 {
	d := int64(noTimer)
	for _, w := range kw.wins {
		at := w.end
		if w.closed {
			at += int64(lateness)
		}
		d = min(d, at)
	}
	return d
}

// errCorruptWindows is returned for a key's windows State entry the
// operator did not write.
var errCorruptWindows = errors.New("window: corrupt time windows state")

// encodeKeyWindows appends kw's state value to dst: per window, start and
// end (8 bytes big-endian each, sign bit flipped), 1 if it is closed else
// 0, uvarint(len acc), acc.
// scratch is a buffer for one accumulator; it is returned grown.
func encodeKeyWindows[A any](dst, scratch []byte, kw *keyWindows[A], agg Aggregator[A]) (out, scr []byte) {
	for _, w := range kw.wins {
		dst = binary.BigEndian.AppendUint64(dst, uint64(w.start)^1<<63)
		dst = binary.BigEndian.AppendUint64(dst, uint64(w.end)^1<<63)
		closed := byte(0)
		if w.closed {
			closed = 1
		}
		dst = append(dst, closed)
		scratch = agg.Encode(scratch[:0], w.acc)
		dst = binary.AppendUvarint(dst, uint64(len(scratch)))
		dst = append(dst, scratch...)
	}
	return dst, scratch
}

// decodeKeyWindows reverses encodeKeyWindows; the accumulators may keep
// slices of v. The timer is taken to be at the windows' deadline (the
// invariant of keyWindows).
func decodeKeyWindows[A any](v []byte, agg Aggregator[A], lateness time.Duration) (*keyWindows[A], error) {
	kw := &keyWindows[A]{}
	for len(v) > 0 {
		if len(v) < 17 || v[16] > 1 {
			return nil, errCorruptWindows
		}
		start := int64(binary.BigEndian.Uint64(v) ^ 1<<63)
		end := int64(binary.BigEndian.Uint64(v[8:]) ^ 1<<63)
		closed := v[16] == 1
		n, w := binary.Uvarint(v[17:])
		if w <= 0 || uint64(len(v)-17-w) < n {
			return nil, errCorruptWindows
		}
		acc, err := agg.Decode(v[17+w : 17+w+int(n)])
		if err != nil {
			return nil, fmt.Errorf("decode accumulator: %w", err)
		}
		kw.wins = append(kw.wins, timeWindow[A]{start: start, end: end, closed: closed, acc: acc})
		v = v[17+w+int(n):]
	}
	kw.armed = kw.deadline(lateness)
	return kw, nil
}

// addTime adds rec to the windows of size starting at last, last−slide, …
// that contain its event time and are not expired; a record for none goes
// to the late stream. The key's windows are written to State once, and
// its timer moved when a new window makes it earlier.
//
// A failure may leave the cached windows changed: the runtime (and
// sdktest) then discard this operator value with its cache, and the next
// one loads State, from which the failed attempt's writes are rolled
// back.
func (o *operator[A]) addTime(ctx sdk.Context, rec sdk.Record, last time.Time, size, slide time.Duration) error {
	wm := ctx.Watermark()
	var kw *keyWindows[A]
	o.kbuf = appendKeyPrefix(o.kbuf[:0], tagKeyWindows, rec.Key)
	for start := last; start.Add(size).After(rec.EventTime); start = start.Add(-slide) {
		end := start.Add(size)
		if !wm.Before(end.Add(o.cfg.Lateness)) {
			continue // expired: its state is gone
		}
		if kw == nil {
			var err error
			if kw, err = o.keyWindows(ctx, o.kbuf); err != nil {
				return err
			}
			if kw == nil {
				kw = &keyWindows[A]{armed: noTimer, wins: make([]timeWindow[A], 0, size/slide)}
				o.kc.put(o.kbuf, kw)
			}
		}
		s, e := start.UnixNano(), end.UnixNano()
		closed := !wm.Before(end) // first seen within the lateness: its result goes at once
		j := kw.find(s, e)
		if j < 0 {
			j = kw.insert(timeWindow[A]{start: s, end: e, closed: closed, acc: o.agg.Zero()})
		}
		acc, err := o.agg.Add(kw.wins[j].acc, rec)
		if err != nil {
			return err
		}
		kw.wins[j].acc = acc
		if o.cfg.Emit == OnUpdate || closed {
			if err := o.emitTime(ctx, rec.Key, start, end, acc); err != nil {
				return err
			}
		}
	}
	if kw == nil {
		return ctx.Produce(LateStream(o.cfg.Name), rec)
	}
	o.writeKeyWindows(ctx, o.kbuf, kw)
	return o.arm(ctx, o.kbuf, kw)
}

// arm sets the timer of the key whose state key is k at kw's deadline,
// unless it is there already.
func (o *operator[A]) arm(ctx sdk.Context, k []byte, kw *keyWindows[A]) error {
	d := kw.deadline(o.cfg.Lateness)
	if d == kw.armed {
		return nil
	}
	if err := ctx.SetEventTimer(string(k), time.Unix(0, d)); err != nil {
		return err
	}
	kw.armed = d
	return nil
}

// timeTimer handles the timer of a key's windows (tk: its state key):
// every window whose end the watermark passed closes (OnClose: its
// result is produced), every one whose end+lateness it passed is
// removed; then the timer is set at the next deadline.
func (o *operator[A]) timeTimer(ctx sdk.Context, tk string, key []byte) error {
	k := []byte(tk)
	kw, err := o.keyWindows(ctx, k)
	if err != nil || kw == nil {
		return err // none: nothing there (removed meanwhile)
	}
	kw.armed = noTimer // it fired
	wm := ctx.Watermark().UnixNano()
	late := int64(o.cfg.Lateness)
	n := 0
	for _, w := range kw.wins {
		if !w.closed && w.end <= wm {
			w.closed = true
			if o.cfg.Emit == OnClose {
				if err := o.emitTime(ctx, key, time.Unix(0, w.start), time.Unix(0, w.end), w.acc); err != nil {
					return err
				}
			}
		}
		if w.closed && w.end+late <= wm {
			continue // removed
		}
		kw.wins[n] = w
		n++
	}
	clear(kw.wins[n:])
	kw.wins = kw.wins[:n]
	if n == 0 {
		ctx.State().Delete(k)
		o.kc.remove(k)
		return nil
	}
	o.writeKeyWindows(ctx, k, kw)
	return o.arm(ctx, k, kw)
}

// keyWindows returns the windows of the key whose state key is k, or nil
// when it has none: from the cache, or from State (then cached).
func (o *operator[A]) keyWindows(ctx sdk.Context, k []byte) (*keyWindows[A], error) {
	kw, ok, known := o.kc.get(k)
	if ok || known {
		return kw, nil
	}
	v, err := ctx.State().Get(k)
	if errors.Is(err, sdk.ErrNotFound) {
		o.kc.absent(k)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("window operator %q: read windows: %w", o.cfg.Name, err)
	}
	if kw, err = decodeKeyWindows(v, o.agg, o.cfg.Lateness); err != nil {
		return nil, fmt.Errorf("window operator %q: state key %q: %w", o.cfg.Name, k, err)
	}
	o.kc.put(k, kw)
	return kw, nil
}

// writeKeyWindows stores kw under k.
func (o *operator[A]) writeKeyWindows(ctx sdk.Context, k []byte, kw *keyWindows[A]) {
	o.buf, o.abuf = encodeKeyWindows(o.buf[:0], o.abuf, kw, o.agg)
	ctx.State().Set(k, o.buf)
}
