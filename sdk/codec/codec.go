package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"

	json "github.com/segmentio/encoding/json"
	"google.golang.org/protobuf/proto"
)

// Codec turns values of type T into bytes and back: a record's key or
// value, or a state entry. The constructors of this package return codecs
// whose Decode fails with a *DecodeError; a Codec written by hand should do
// the same (see NewDecodeError), so that a dead letter names what failed.
//
// A Codec is a value holding functions: copy it freely. Both functions are
// called from many goroutines at once and must not keep state between
// calls.
type Codec[T any] struct {
	// Name names the encoding ("json", "proto", "int64", …) in errors.
	Name string
	// Encode appends the encoding of v to dst and returns the extended
	// slice, as append does. It must not keep dst.
	Encode func(dst []byte, v T) ([]byte, error)
	// Decode decodes b, which it must not keep or modify: the value
	// returned shares no memory with b (records' bytes are recycled
	// after their callback).
	Decode func(b []byte) (T, error)
}

// DecodeError reports bytes a Codec could not decode: which codec, into
// which Go type, how many bytes, and why. It is what reaches a dead letter's
// sluice-error header when a record does not decode.
type DecodeError struct {
	// Codec is the codec's Name.
	Codec string
	// Type is the Go type decoded into, as reflect prints it
	// ("main.Event", "int64").
	Type string
	// Len is the length of the input in bytes.
	Len int
	// Err is the decoder's error.
	Err error
}

// Error returns "codec: decode <len> bytes of <codec> into <type>: <err>".
func (e *DecodeError) Error() string {
	return fmt.Sprintf("codec: decode %d bytes of %s into %s: %v", e.Len, e.Codec, e.Type, e.Err)
}

// Unwrap returns Err.
func (e *DecodeError) Unwrap() error { return e.Err }

// NewDecodeError returns the *DecodeError for b that codec name failed to
// decode into a T with err: for codecs written outside this package.
func NewDecodeError[T any](name string, b []byte, err error) *DecodeError {
	return &DecodeError{Codec: name, Type: typeName[T](), Len: len(b), Err: err}
}

// ErrLength is the Err of the DecodeError that Int64, Uint64 and Float64
// return for input that is not 8 bytes long (a truncated key, or one
// written by another codec).
var ErrLength = errors.New("codec: not 8 bytes")

// typeName names T for DecodeError.Type.
func typeName[T any]() string { return reflect.TypeFor[T]().String() }

// decoder returns Decode for codec name: decode turns b into a T, and its
// error is wrapped in a DecodeError naming name and T (computed once).
func decoder[T any](name string, decode func(b []byte) (T, error)) func([]byte) (T, error) {
	typ := typeName[T]()
	return func(b []byte) (T, error) {
		v, err := decode(b)
		if err != nil {
			var zero T
			return zero, &DecodeError{Codec: name, Type: typ, Len: len(b), Err: err}
		}
		return v, nil
	}
}

// JSON returns a codec for T as JSON, on github.com/segmentio/encoding
// (the fastest of the libraries measured in the package doc): the same
// text as encoding/json's Marshal, with map keys sorted, except that '<',
// '>' and '&' are not escaped as \u003c, \u003e and \u0026; it decodes
// whatever encoding/json's Unmarshal decodes, and refuses trailing bytes
// after the value. Unknown fields are ignored.
func JSON[T any]() Codec[T] {
	const name = "json"
	// The library takes an any: a T passed as one would be copied to the
	// heap on every call, so each call borrows a *T from a pool instead
	// (no allocation but the decoded strings, maps and slices).
	pool := sync.Pool{New: func() any { return new(T) }}
	return Codec[T]{
		Name: name,
		Encode: func(dst []byte, v T) ([]byte, error) {
			p := pool.Get().(*T)
			*p = v
			b, err := json.Append(dst, p, json.SortMapKeys)
			var zero T
			*p = zero // keep nothing of v alive
			pool.Put(p)
			if err != nil {
				return dst, fmt.Errorf("codec: encode %s as json: %w", typeName[T](), err)
			}
			return b, nil
		},
		Decode: decoder(name, func(b []byte) (T, error) {
			p := pool.Get().(*T)
			err := json.Unmarshal(b, p)
			v := *p
			var zero T
			*p = zero
			pool.Put(p)
			return v, err
		}),
	}
}

// Proto returns a codec for the protobuf message type T, a pointer to a
// generated message struct such as *wirepb.Event. Decode makes each new
// message by reflection on T's message descriptor (found once, here), so no
// constructor is needed. Encoding is deterministic (map entries sorted), so
// equal messages give equal bytes and may be used as keys.
func Proto[T proto.Message]() Codec[T] {
	const name = "proto"
	var zero T
	mt := zero.ProtoReflect().Type() // generated messages answer for a nil pointer
	enc := proto.MarshalOptions{Deterministic: true}
	return Codec[T]{
		Name: name,
		Encode: func(dst []byte, v T) ([]byte, error) {
			b, err := enc.MarshalAppend(dst, v)
			if err != nil {
				return dst, fmt.Errorf("codec: encode %s as proto: %w", typeName[T](), err)
			}
			return b, nil
		},
		Decode: decoder(name, func(b []byte) (T, error) {
			m := mt.New().Interface().(T)
			err := proto.Unmarshal(b, m)
			return m, err
		}),
	}
}

// Bytes returns the identity codec for []byte. Decode returns a copy of
// its input (nil for empty input), which the caller may keep.
func Bytes() Codec[[]byte] {
	return Codec[[]byte]{
		Name:   "bytes",
		Encode: func(dst []byte, v []byte) ([]byte, error) { return append(dst, v...), nil },
		Decode: func(b []byte) ([]byte, error) {
			if len(b) == 0 {
				return nil, nil
			}
			return append([]byte(nil), b...), nil
		},
	}
}

// String returns the codec for strings as their bytes. It does not check
// that they are UTF-8: any bytes decode.
func String() Codec[string] {
	return Codec[string]{
		Name:   "string",
		Encode: func(dst []byte, v string) ([]byte, error) { return append(dst, v...), nil },
		Decode: func(b []byte) (string, error) { return string(b), nil },
	}
}

// Int64 returns the codec for int64 as 8 big-endian bytes with the sign bit
// flipped, so that the bytes of two numbers compare (bytes.Compare) as the
// numbers do: math.MinInt64 is 00…00, -1 is 7f ff…ff, 0 is 80 00…00. State
// keys and key ranges then sort numerically. This is not the layout of
// sdk.PutInt64 (plain two's complement): do not mix the two on one key.
func Int64() Codec[int64] {
	return fixed8("int64",
		func(v int64) uint64 { return uint64(v) ^ 1<<63 },
		func(u uint64) int64 { return int64(u ^ 1<<63) })
}

// Uint64 returns the codec for uint64 as 8 big-endian bytes, which compare
// as the numbers do.
func Uint64() Codec[uint64] {
	return fixed8("uint64",
		func(v uint64) uint64 { return v },
		func(u uint64) uint64 { return u })
}

// Float64 returns the codec for float64 as 8 big-endian bytes of its IEEE
// 754 bits, rearranged so that the bytes compare as the numbers do
// (positive numbers have the sign bit set, negative ones all bits
// inverted): -Inf < -1 < -0 < +0 < 1 < +Inf, and NaNs below -Inf or above
// +Inf by their sign. Every value round-trips bit for bit, -0 and NaN
// payloads included; -0 and +0 are equal numbers with different bytes.
func Float64() Codec[float64] {
	return fixed8("float64",
		func(v float64) uint64 {
			u := math.Float64bits(v)
			if u&(1<<63) != 0 {
				return ^u
			}
			return u | 1<<63
		},
		func(u uint64) float64 {
			if u&(1<<63) != 0 {
				return math.Float64frombits(u &^ (1 << 63))
			}
			return math.Float64frombits(^u)
		})
}

// fixed8 is the codec for 8 big-endian bytes: toBits and fromBits map a T
// to the bytes' uint64 and back.
func fixed8[T any](name string, toBits func(T) uint64, fromBits func(uint64) T) Codec[T] {
	return Codec[T]{
		Name: name,
		Encode: func(dst []byte, v T) ([]byte, error) {
			return binary.BigEndian.AppendUint64(dst, toBits(v)), nil
		},
		Decode: decoder(name, func(b []byte) (T, error) {
			if len(b) != 8 {
				var zero T
				return zero, ErrLength
			}
			return fromBits(binary.BigEndian.Uint64(b)), nil
		}),
	}
}
