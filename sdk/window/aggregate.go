package window

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/sdk"
)

// Aggregator folds the records of a window into an accumulator of type A,
// which the window operator keeps in State (encoded) per (key, window):
// one value per window, not its records.
//
// The operator also keeps accumulators in memory between records (see
// Config.CacheWindows), so an accumulator must not refer to a record's
// slices (Key, Value, headers): Add copies what it keeps. Decode may keep
// slices of b, which the operator does not reuse.
type Aggregator[A any] interface {
	// Zero returns the accumulator of an empty window.
	Zero() A
	// Add folds rec into acc and returns the result; an error fails the
	// record (it is retried, then dead-lettered).
	Add(acc A, rec sdk.Record) (A, error)
	// Merge combines the accumulators of two windows (session windows
	// merge when a record bridges them); a is the earlier window's.
	Merge(a, b A) A
	// Result returns the value of the output record.
	Result(acc A) []byte
	// Encode appends acc's encoding to dst; Decode reverses it.
	Encode(dst []byte, acc A) []byte
	Decode(b []byte) (A, error)
}

// Funcs is an Aggregator made of functions: every field is required
// except Merge, which only session windows need.
type Funcs[A any] struct {
	ZeroFunc   func() A
	AddFunc    func(acc A, rec sdk.Record) (A, error)
	MergeFunc  func(a, b A) A
	ResultFunc func(acc A) []byte
	EncodeFunc func(dst []byte, acc A) []byte
	DecodeFunc func(b []byte) (A, error)
}

var _ Aggregator[int64] = Funcs[int64]{}

// Zero calls ZeroFunc.
func (f Funcs[A]) Zero() A { return f.ZeroFunc() }

// Add calls AddFunc.
func (f Funcs[A]) Add(acc A, rec sdk.Record) (A, error) { return f.AddFunc(acc, rec) }

// Merge calls MergeFunc; without one it panics (the operator's attempt
// fails with that message).
func (f Funcs[A]) Merge(a, b A) A {
	if f.MergeFunc == nil {
		panic("window: the aggregator has no MergeFunc, which session windows need")
	}
	return f.MergeFunc(a, b)
}

// Result calls ResultFunc.
func (f Funcs[A]) Result(acc A) []byte { return f.ResultFunc(acc) }

// Encode calls EncodeFunc.
func (f Funcs[A]) Encode(dst []byte, acc A) []byte { return f.EncodeFunc(dst, acc) }

// Decode calls DecodeFunc.
func (f Funcs[A]) Decode(b []byte) (A, error) { return f.DecodeFunc(b) }

// int64Agg is the base of the int64 aggregators: 8 big-endian bytes in
// state, decimal text as result.
func int64Agg(add func(acc int64, rec sdk.Record) (int64, error), merge func(a, b int64) int64) Funcs[int64] {
	return Funcs[int64]{
		ZeroFunc:   func() int64 { return 0 },
		AddFunc:    add,
		MergeFunc:  merge,
		ResultFunc: func(n int64) []byte { return strconv.AppendInt(nil, n, 10) },
		EncodeFunc: func(dst []byte, n int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(n)) },
		DecodeFunc: func(b []byte) (int64, error) {
			if len(b) != 8 {
				return 0, fmt.Errorf("window: int64 accumulator has %d bytes, want 8", len(b))
			}
			return int64(binary.BigEndian.Uint64(b)), nil
		},
	}
}

// Count counts the records of a window; the result is the count in
// decimal.
func Count() Aggregator[int64] {
	return int64Agg(func(n int64, _ sdk.Record) (int64, error) { return n + 1, nil }, func(a, b int64) int64 { return a + b })
}

// Sum adds value(rec) over a window; the result is the sum in decimal.
func Sum(value func(sdk.Record) (int64, error)) Aggregator[int64] {
	return int64Agg(func(n int64, rec sdk.Record) (int64, error) {
		v, err := value(rec)
		return n + v, err
	}, func(a, b int64) int64 { return a + b })
}

// DecimalValue parses a record's value as a decimal int64, for Sum.
func DecimalValue(rec sdk.Record) (int64, error) {
	n, err := strconv.ParseInt(string(rec.Value), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("window: value %q is not a decimal integer: %w", rec.Value, err)
	}
	return n, nil
}

// Collect keeps the values of a window's records, in arrival order (merged
// sessions: each session's in turn, by start), the whole list in State:
// use it only when the result needs every record.
// The result is the values joined with sep.
func Collect(sep string) Aggregator[[][]byte] {
	return Funcs[[][]byte]{
		ZeroFunc: func() [][]byte { return nil },
		AddFunc: func(vs [][]byte, rec sdk.Record) ([][]byte, error) {
			return append(vs, bytes.Clone(rec.Value)), nil // the record's buffer is not ours to keep
		},
		MergeFunc: func(a, b [][]byte) [][]byte { return append(a, b...) },
		ResultFunc: func(vs [][]byte) []byte {
			var out []byte
			for j, v := range vs {
				if j > 0 {
					out = append(out, sep...)
				}
				out = append(out, v...)
			}
			return out
		},
		EncodeFunc: func(dst []byte, vs [][]byte) []byte {
			for _, v := range vs {
				dst = binary.AppendUvarint(dst, uint64(len(v)))
				dst = append(dst, v...)
			}
			return dst
		},
		DecodeFunc: func(b []byte) ([][]byte, error) {
			var vs [][]byte
			for len(b) > 0 {
				n, k := binary.Uvarint(b)
				if k <= 0 || uint64(len(b)-k) < n {
					return nil, fmt.Errorf("window: corrupt collected values")
				}
				vs = append(vs, b[k:k+int(n)])
				b = b[k+int(n):]
			}
			return vs, nil
		},
	}
}
