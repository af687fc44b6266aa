package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/window"
)

// Windowed is the result of one window of one key: what Aggregate hands
// on.
type Windowed[K, R any] struct {
	Key K
	// Start and End bound an event-time window, [Start, End); both are
	// zero for count and global windows.
	Start, End time.Time
	// Value is the aggregator's Result.
	Value R
}

// Aggregator folds the values of type T of a window into an accumulator
// of type A, kept in State with the codec Acc (one per key and window,
// never the values), and gives the window's result R. Zero, Add, Result
// and Acc are required; Merge only for session windows.
//
// Add gets decoded values, which share no memory with records, so an
// accumulator may keep them (the window operator keeps accumulators in
// memory between records; see window.Aggregator).
type Aggregator[T, A, R any] struct {
	Zero   func() A
	Add    func(acc A, v T) A
	Merge  func(a, b A) A // a is the earlier window's
	Result func(acc A) R
	Acc    codec.Codec[A]
}

// Count counts a window's values.
func Count[T any]() Aggregator[T, int64, int64] {
	return Sum(func(T) int64 { return 1 })
}

// Sum adds value(v) over a window's values.
func Sum[T any](value func(T) int64) Aggregator[T, int64, int64] {
	return Aggregator[T, int64, int64]{
		Zero:   func() int64 { return 0 },
		Add:    func(n int64, v T) int64 { return n + value(v) },
		Merge:  func(a, b int64) int64 { return a + b },
		Result: func(n int64) int64 { return n },
		Acc:    codec.Int64(),
	}
}

// Aggregate adds a stage aggregating the values of each key in windows
// (window.Tumbling, Hopping, Session, CountOf, Global) with agg; each
// window's result is handed on as a Windowed, its value encoded with rc.
// It is an operator of its own, sdk/window's, named
// "<pipeline>.<stage>", reading the keyed stream with group-by routing;
// it keeps one accumulator per key and window in State, closes event-time
// windows as the watermark passes them (so the pipeline's source must
// give records event times and watermarks) and produces to
// "<pipeline>.<stage>", or, when a To or Output is all that reads it, to
// that one's stream. Lateness and Emit set the window's lateness and
// when results are produced; values too late for their windows go to
// "<pipeline>.<stage>.late" as the records they arrived as.
//
// The stages after it do not chain to it: a Map after Aggregate starts an
// operator reading its results. A result record has the key (encoded
// with the keyed stream's key codec) as Key, the result (encoded with rc)
// as Value and the bounds in the window.HeaderStart and HeaderEnd
// headers, as every window operator's.
func Aggregate[K, T, A, R any](k *Keyed[K, T], name string, w window.Windows, agg Aggregator[T, A, R], rc codec.Codec[R], opts ...Option) *Stream[Windowed[K, R]] {
	out := newStream(k.st.p, name, kindAggregate, k.st, windowedCodec(k.kc, rc), opts)
	out.f = windowedFormat(k.kc, rc)
	st := out.st
	st.require(agg.Zero != nil && agg.Add != nil && agg.Result != nil, "the Aggregator's Zero, Add and Result")
	requireCodec(st, agg.Acc)
	requireCodec(st, rc)
	st.operator = func(meta sdk.Metadata, output string) (sdk.Factory, error) {
		cfg := window.Config{Name: meta.Name, Input: meta.Inputs[0].Stream, Output: output, Windows: w,
			Lateness: st.opts.lateness, Emit: st.opts.emit,
			Parallelism: meta.Parallelism, KeyGroups: meta.KeyGroups, Restart: meta.Restart}
		return window.New(cfg, windowAgg[T, A, R]{agg: agg, vc: k.vc, rc: rc, op: meta.Name, stage: st.name})
	}
	return out
}

// windowAgg is an Aggregator as sdk/window takes it: over records,
// decoding their values, with the accumulator and result encoded.
type windowAgg[T, A, R any] struct {
	agg       Aggregator[T, A, R]
	vc        codec.Codec[T]
	rc        codec.Codec[R]
	op, stage string
}

var _ window.Aggregator[int64] = windowAgg[string, int64, int64]{}

// Zero returns the accumulator of an empty window.
func (w windowAgg[T, A, R]) Zero() A { return w.agg.Zero() }

// Add decodes rec's value and adds it; a value that does not decode fails
// the record (dead-lettered after its retries).
func (w windowAgg[T, A, R]) Add(acc A, rec sdk.Record) (A, error) {
	v, err := w.vc.Decode(rec.Value)
	if err != nil {
		return acc, decodeError(w.op, w.stage, rec.Stream, err)
	}
	return w.agg.Add(acc, v), nil
}

// Merge merges two sessions; without a Merge it panics, failing the
// attempt with that message, as window.Funcs does.
func (w windowAgg[T, A, R]) Merge(a, b A) A {
	if w.agg.Merge == nil {
		panic(fmt.Sprintf("stream: stage %q: the Aggregator has no Merge, which session windows need", w.stage))
	}
	return w.agg.Merge(a, b)
}

// Result encodes the window's result. window.Aggregator has no error
// here: a failed encoding panics, which fails the attempt (a timer's:
// retried, then dead-lettered) with the error.
func (w windowAgg[T, A, R]) Result(acc A) []byte {
	b, err := w.rc.Encode(nil, w.agg.Result(acc))
	if err != nil {
		panic(fmt.Sprintf("stream: operator %q, stage %q: encode a result: %v", w.op, w.stage, err))
	}
	return b
}

// Encode encodes an accumulator for State; a failure panics, as Result's.
func (w windowAgg[T, A, R]) Encode(dst []byte, acc A) []byte {
	b, err := w.agg.Acc.Encode(dst, acc)
	if err != nil {
		panic(fmt.Sprintf("stream: operator %q, stage %q: encode an accumulator: %v", w.op, w.stage, err))
	}
	return b
}

// Decode decodes an accumulator from State.
func (w windowAgg[T, A, R]) Decode(b []byte) (A, error) { return w.agg.Acc.Decode(b) }

// windowedFormat is the window operator's result record: the key in Key,
// the result in Value, the bounds (if any) in headers.
func windowedFormat[K, R any](kc codec.Codec[K], rc codec.Codec[R]) format[Windowed[K, R]] {
	kv := keyedFormat(kc, rc)
	return format[Windowed[K, R]]{
		encode: func(a *arena, w Windowed[K, R]) (sdk.Record, error) {
			rec, err := kv.encode(a, KV[K, R]{Key: w.Key, Value: w.Value})
			if !w.Start.IsZero() || !w.End.IsZero() {
				rec.Headers = []sdk.Header{
					{Key: window.HeaderStart, Value: strconv.FormatInt(w.Start.UnixNano(), 10)},
					{Key: window.HeaderEnd, Value: strconv.FormatInt(w.End.UnixNano(), 10)},
				}
			}
			return rec, err
		},
		decode: func(rec sdk.Record) (Windowed[K, R], error) {
			r, err := kv.decode(rec)
			w := Windowed[K, R]{Key: r.Key, Value: r.Value}
			if s, e, ok := window.Bounds(rec); ok {
				w.Start, w.End = s, e
			}
			return w, err
		},
	}
}

// errShort is the Err of the DecodeError of a Windowed value cut short.
var errShort = errors.New("stream: windowed value cut short")

// noTime stands for a zero time in the windowed codec.
const noTime = math.MinInt64

// windowedCodec encodes a Windowed alone (where a stream after Aggregate
// is keyed again): the key's length (4 bytes, big-endian) and bytes,
// start and end in Unix nanoseconds (8 bytes each; math.MinInt64 for a
// zero time), then the result's bytes.
func windowedCodec[K, R any](kc codec.Codec[K], rc codec.Codec[R]) codec.Codec[Windowed[K, R]] {
	name := "windowed(" + kc.Name + "," + rc.Name + ")"
	nanos := func(t time.Time) uint64 {
		n := int64(noTime)
		if !t.IsZero() {
			n = t.UnixNano()
		}
		return uint64(n)
	}
	timeOf := func(b []byte) time.Time {
		if n := int64(binary.BigEndian.Uint64(b)); n != noTime {
			return time.Unix(0, n)
		}
		return time.Time{}
	}
	return codec.Codec[Windowed[K, R]]{
		Name: name,
		Encode: func(dst []byte, w Windowed[K, R]) ([]byte, error) {
			at := len(dst)
			dst = append(dst, 0, 0, 0, 0)
			dst, err := kc.Encode(dst, w.Key)
			if err != nil {
				return dst[:at], err
			}
			binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
			dst = binary.BigEndian.AppendUint64(dst, nanos(w.Start))
			dst = binary.BigEndian.AppendUint64(dst, nanos(w.End))
			return rc.Encode(dst, w.Value)
		},
		Decode: func(b []byte) (Windowed[K, R], error) {
			var w Windowed[K, R]
			if len(b) < 4 || uint64(len(b)-4) < uint64(binary.BigEndian.Uint32(b))+16 {
				return w, codec.NewDecodeError[Windowed[K, R]](name, b, errShort)
			}
			n := int(binary.BigEndian.Uint32(b))
			var err error
			if w.Key, err = kc.Decode(b[4 : 4+n]); err != nil {
				return w, err
			}
			w.Start, w.End = timeOf(b[4+n:]), timeOf(b[12+n:])
			w.Value, err = rc.Decode(b[20+n:])
			return w, err
		},
	}
}
