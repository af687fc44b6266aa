package window

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// keyWindows is one record key's open tumbling or hopping windows, by
// start: one State entry per key (see keys.go), so that a record added to
// several hopping windows writes State once.
type keyWindows[A any] struct{ wins []timeWindow[A] }

// timeWindow is window [start, end) (Unix ns) and its accumulator.
type timeWindow[A any] struct {
	start, end int64
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

// insert adds window [start, end) with acc, in start order, and returns
// its index.
func (kw *keyWindows[A]) insert(start, end int64, acc A) int {
	j := len(kw.wins)
	for j > 0 && kw.wins[j-1].start > start {
		j--
	}
	var zero timeWindow[A]
	kw.wins = append(kw.wins, zero)
	copy(kw.wins[j+1:], kw.wins[j:])
	kw.wins[j] = timeWindow[A]{start: start, end: end, acc: acc}
	return j
}

// remove removes the window at index j.
func (kw *keyWindows[A]) remove(j int) {
	copy(kw.wins[j:], kw.wins[j+1:])
	var zero timeWindow[A]
	kw.wins[len(kw.wins)-1] = zero
	kw.wins = kw.wins[:len(kw.wins)-1]
}

// errCorruptWindows is returned for a key's windows State entry the
// operator did not write.
var errCorruptWindows = errors.New("window: corrupt time windows state")

// encodeKeyWindows appends kw's state value to dst: per window, start and
// end (8 bytes big-endian each, sign bit flipped), uvarint(len acc), acc.
// scratch is a buffer for one accumulator; it is returned grown.
func encodeKeyWindows[A any](dst, scratch []byte, kw *keyWindows[A], agg Aggregator[A]) (out, scr []byte) {
	for _, w := range kw.wins {
		dst = binary.BigEndian.AppendUint64(dst, uint64(w.start)^1<<63)
		dst = binary.BigEndian.AppendUint64(dst, uint64(w.end)^1<<63)
		scratch = agg.Encode(scratch[:0], w.acc)
		dst = binary.AppendUvarint(dst, uint64(len(scratch)))
		dst = append(dst, scratch...)
	}
	return dst, scratch
}

// decodeKeyWindows reverses encodeKeyWindows; the accumulators may keep
// slices of v.
func decodeKeyWindows[A any](v []byte, agg Aggregator[A]) (*keyWindows[A], error) {
	kw := &keyWindows[A]{}
	for len(v) > 0 {
		if len(v) < 16 {
			return nil, errCorruptWindows
		}
		start := int64(binary.BigEndian.Uint64(v) ^ 1<<63)
		end := int64(binary.BigEndian.Uint64(v[8:]) ^ 1<<63)
		n, w := binary.Uvarint(v[16:])
		if w <= 0 || uint64(len(v)-16-w) < n {
			return nil, errCorruptWindows
		}
		acc, err := agg.Decode(v[16+w : 16+w+int(n)])
		if err != nil {
			return nil, fmt.Errorf("decode accumulator: %w", err)
		}
		kw.wins = append(kw.wins, timeWindow[A]{start: start, end: end, acc: acc})
		v = v[16+w+int(n):]
	}
	return kw, nil
}

// addTime adds rec to the windows of size starting at last, last−slide, …
// that contain its event time and are not expired; a record for none goes
// to the late stream. The key's windows are written to State once.
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
				kw = &keyWindows[A]{}
				o.kc.put(o.kbuf, kw)
			}
		}
		s, e := start.UnixNano(), end.UnixNano()
		j := kw.find(s, e)
		if j < 0 {
			j = kw.insert(s, e, o.agg.Zero())
			o.tbuf = appendWindowKey(o.tbuf[:0], tagTime, rec.Key, start, end)
			if err := o.arm(ctx, string(o.tbuf), end, wm); err != nil {
				return err
			}
		}
		acc, err := o.agg.Add(kw.wins[j].acc, rec)
		if err != nil {
			return err
		}
		kw.wins[j].acc = acc
		if o.cfg.Emit == OnUpdate || !wm.Before(end) {
			if err := o.emitTime(ctx, rec.Key, start, end, acc); err != nil {
				return err
			}
		}
	}
	if kw == nil {
		return ctx.Produce(LateStream(o.cfg.Name), rec)
	}
	o.writeKeyWindows(ctx, o.kbuf, kw)
	return nil
}

// timeTimer closes window [start, end) of key at its end and removes it
// at end+lateness (tk: the timer's key).
func (o *operator[A]) timeTimer(ctx sdk.Context, tk string, key []byte, start, end, at time.Time) error {
	o.kbuf = appendKeyPrefix(o.kbuf[:0], tagKeyWindows, key)
	kw, err := o.keyWindows(ctx, o.kbuf)
	if err != nil || kw == nil {
		return err // none: nothing there (removed meanwhile)
	}
	j := kw.find(start.UnixNano(), end.UnixNano())
	if j < 0 {
		return nil
	}
	if at.Before(end.Add(o.cfg.Lateness)) || o.cfg.Lateness == 0 && at.Equal(end) {
		// Closing: emit; keep the window for late records until
		// end+lateness.
		if o.cfg.Emit == OnClose {
			if err := o.emitTime(ctx, key, start, end, kw.wins[j].acc); err != nil {
				return err
			}
		}
		if o.cfg.Lateness > 0 {
			return ctx.SetEventTimer(tk, end.Add(o.cfg.Lateness))
		}
	}
	kw.remove(j)
	if len(kw.wins) == 0 {
		ctx.State().Delete(o.kbuf)
		o.kc.remove(o.kbuf)
		return nil
	}
	o.writeKeyWindows(ctx, o.kbuf, kw)
	return nil
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
	if kw, err = decodeKeyWindows(v, o.agg); err != nil {
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
