package codec_test

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sluicehq/sluice/sdk/codec"
)

// event is a Yahoo Streaming Benchmark ad event, the record the JSON
// benchmark and round trips use.
type event struct {
	UserID    string `json:"user_id"`
	PageID    string `json:"page_id"`
	AdID      string `json:"ad_id"`
	AdType    string `json:"ad_type"`
	EventType string `json:"event_type"`
	EventTime int64  `json:"event_time"`
	IP        string `json:"ip_address"`
}

var ysbEvent = event{
	UserID:    "3f1c9a2e-6b7d-4e21-9c3a-7d5e8f0a1b2c",
	PageID:    "a9b8c7d6-e5f4-4a3b-8c2d-1e0f9a8b7c6d",
	AdID:      "0d1e2f3a-4b5c-4d6e-8f7a-9b0c1d2e3f4a",
	AdType:    "banner",
	EventType: "view",
	EventTime: 1730000000123,
	IP:        "1.2.3.4",
}

// roundTrip encodes v after a prefix, checks the prefix is kept, decodes
// what was appended and returns it.
func roundTrip[T any](t *testing.T, c codec.Codec[T], v T) T {
	t.Helper()
	prefix := []byte("prefix")
	b, err := c.Encode(bytes.Clone(prefix), v)
	if err != nil {
		t.Fatalf("%s: encode %v: %v", c.Name, v, err)
	}
	if !bytes.HasPrefix(b, prefix) {
		t.Fatalf("%s: encode %v overwrote dst: got %q", c.Name, v, b)
	}
	got, err := c.Decode(b[len(prefix):])
	if err != nil {
		t.Fatalf("%s: decode %v from %x: %v", c.Name, v, b[len(prefix):], err)
	}
	return got
}

// checkRoundTrips checks that every value comes back equal (by eq).
func checkRoundTrips[T any](t *testing.T, c codec.Codec[T], eq func(a, b T) bool, vs ...T) {
	t.Helper()
	for _, v := range vs {
		if got := roundTrip(t, c, v); !eq(got, v) {
			t.Errorf("%s: round trip: got %v, want %v", c.Name, got, v)
		}
	}
}

func equal[T comparable](a, b T) bool { return a == b }

func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

func TestRoundTrip(t *testing.T) {
	t.Run("int64", func(t *testing.T) {
		checkRoundTrips(t, codec.Int64(), equal, 0, 1, -1, 42, -42, math.MaxInt64, math.MinInt64, math.MinInt64+1)
	})
	t.Run("uint64", func(t *testing.T) {
		checkRoundTrips(t, codec.Uint64(), equal, 0, 1, 1<<63, math.MaxUint64)
	})
	t.Run("float64", func(t *testing.T) {
		checkRoundTrips(t, codec.Float64(), sameFloat, 0, math.Copysign(0, -1), 1, -1, math.Pi,
			math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64, -math.MaxFloat64)
	})
	t.Run("string", func(t *testing.T) {
		checkRoundTrips(t, codec.String(), equal, "", "a", "héllo, 世界", "\x00\xff not utf-8")
	})
	t.Run("bytes", func(t *testing.T) {
		checkRoundTrips(t, codec.Bytes(), bytes.Equal, nil, []byte{0}, []byte("abc"), bytes.Repeat([]byte{0xff}, 1000))
	})
	t.Run("json", func(t *testing.T) {
		checkRoundTrips(t, codec.JSON[event](), equal, event{}, ysbEvent,
			event{UserID: `"quoted" \ <tag> & 😀 \u2028`, EventTime: math.MinInt64},
			event{EventTime: math.MaxInt64})
		checkRoundTrips(t, codec.JSON[map[string]int](), func(a, b map[string]int) bool { return fmt.Sprint(a) == fmt.Sprint(b) },
			map[string]int{"b": 2, "a": 1}, nil)
	})
	t.Run("proto", func(t *testing.T) {
		checkRoundTrips(t, codec.Proto[*timestamppb.Timestamp](),
			func(a, b *timestamppb.Timestamp) bool { return proto.Equal(a, b) },
			&timestamppb.Timestamp{}, &timestamppb.Timestamp{Seconds: 1730000000, Nanos: 123},
			&timestamppb.Timestamp{Seconds: math.MinInt64, Nanos: -1})
	})
}

// TestJSONText checks that JSON writes encoding/json's text, map keys
// sorted, without escaping HTML characters.
func TestJSONText(t *testing.T) {
	b, err := codec.JSON[map[string]string]().Encode(nil, map[string]string{"b": "<&>", "a": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"a":"x","b":"<&>"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// randString returns a string of up to 40 runes, mixing ASCII with what
// JSON must escape and multi-byte runes.
func randString(r *rand.Rand) string {
	const runes = "abcXYZ019 -_\"\\/<>&\x00\x01\x1f\t\n\x7féü世界😀\u2028\u2029\ufffd"
	rs := []rune(runes)
	var sb strings.Builder
	for range r.IntN(41) {
		sb.WriteRune(rs[r.IntN(len(rs))])
	}
	return sb.String()
}

// randInt64 returns an int64 of any size, often near the extremes or 0.
func randInt64(r *rand.Rand) int64 {
	switch r.IntN(8) {
	case 0:
		return math.MinInt64 + r.Int64N(4)
	case 1:
		return math.MaxInt64 - r.Int64N(4)
	case 2:
		return r.Int64N(5) - 2
	case 3:
		return int64(r.Uint64()) >> r.IntN(64) // any magnitude, either sign
	default:
		return int64(r.Uint64())
	}
}

// TestRoundTripRandom is the property: decode(encode(v)) == v for many
// random values of every codec.
func TestRoundTripRandom(t *testing.T) {
	const n = 5000
	r := rand.New(rand.NewPCG(1, 2))
	for range n {
		checkRoundTrips(t, codec.Int64(), equal, randInt64(r))
		checkRoundTrips(t, codec.Uint64(), equal, r.Uint64())
		checkRoundTrips(t, codec.Float64(), sameFloat, math.Float64frombits(r.Uint64()), r.NormFloat64())
		s := randString(r)
		checkRoundTrips(t, codec.String(), equal, s)
		checkRoundTrips(t, codec.Bytes(), bytes.Equal, []byte(s))
		checkRoundTrips(t, codec.JSON[event](), equal, event{
			UserID: randString(r), PageID: randString(r), AdID: randString(r), AdType: randString(r),
			EventType: randString(r), EventTime: randInt64(r), IP: randString(r),
		})
		checkRoundTrips(t, codec.Proto[*timestamppb.Timestamp](),
			func(a, b *timestamppb.Timestamp) bool { return proto.Equal(a, b) },
			&timestamppb.Timestamp{Seconds: randInt64(r), Nanos: int32(r.Uint32())})
		if t.Failed() {
			return
		}
	}
}

// checkOrder checks that the encodings of a and b compare as a and b do.
func checkOrder[T cmp.Ordered](t *testing.T, c codec.Codec[T], a, b T) {
	t.Helper()
	ea, _ := c.Encode(nil, a)
	eb, _ := c.Encode(nil, b)
	if got, want := bytes.Compare(ea, eb), cmp.Compare(a, b); got != want {
		t.Errorf("%s: bytes.Compare(%x, %x) = %d, want %d as for %v and %v", c.Name, ea, eb, got, want, a, b)
	}
}

func TestOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	t.Run("int64", func(t *testing.T) {
		fixed := []int64{math.MinInt64, math.MinInt64 + 1, -256, -255, -1, 0, 1, 255, 256, math.MaxInt64 - 1, math.MaxInt64}
		for _, a := range fixed {
			for _, b := range fixed {
				checkOrder(t, codec.Int64(), a, b)
			}
		}
		for range 20000 {
			checkOrder(t, codec.Int64(), randInt64(r), randInt64(r))
		}
	})
	t.Run("uint64", func(t *testing.T) {
		for range 20000 {
			checkOrder(t, codec.Uint64(), r.Uint64()>>r.IntN(64), r.Uint64()>>r.IntN(64))
		}
	})
	t.Run("float64", func(t *testing.T) {
		fixed := []float64{math.Inf(-1), -math.MaxFloat64, -1, -math.SmallestNonzeroFloat64, 0,
			math.SmallestNonzeroFloat64, 1, math.MaxFloat64, math.Inf(1)}
		for _, a := range fixed {
			for _, b := range fixed {
				checkOrder(t, codec.Float64(), a, b)
			}
		}
		for range 20000 {
			a, b := math.Float64frombits(r.Uint64()), r.NormFloat64()*1e6
			if math.IsNaN(a) {
				continue
			}
			checkOrder(t, codec.Float64(), a, b)
			checkOrder(t, codec.Float64(), b, a)
		}
	})
}

func TestDecodeError(t *testing.T) {
	ts := codec.Proto[*timestamppb.Timestamp]()
	for _, tc := range []struct {
		name     string
		decode   func([]byte) error
		in       []byte
		codec    string
		typ      string
		isLength bool
	}{
		{"int64 truncated", errOf(codec.Int64()), []byte{0x80, 0, 0, 0, 0, 0, 0}, "int64", "int64", true},
		{"int64 empty", errOf(codec.Int64()), nil, "int64", "int64", true},
		{"uint64 too long", errOf(codec.Uint64()), make([]byte, 9), "uint64", "uint64", true},
		{"float64 truncated", errOf(codec.Float64()), []byte{1, 2, 3}, "float64", "float64", true},
		{"json truncated", errOf(codec.JSON[event]()), []byte(`{"user_id":"a`), "json", "codec_test.event", false},
		{"json wrong type", errOf(codec.JSON[event]()), []byte(`{"event_time":"soon"}`), "json", "codec_test.event", false},
		{"json trailing bytes", errOf(codec.JSON[event]()), []byte(`{} {}`), "json", "codec_test.event", false},
		{"json empty", errOf(codec.JSON[int]()), nil, "json", "int", false},
		{"proto truncated", errOf(ts), []byte{0x08}, "proto", "*timestamppb.Timestamp", false},
		{"proto bad wire type", errOf(ts), []byte{0x0f, 1}, "proto", "*timestamppb.Timestamp", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.decode(tc.in)
			var de *codec.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("got %T %v, want a *codec.DecodeError", err, err)
			}
			if de.Codec != tc.codec || de.Type != tc.typ || de.Len != len(tc.in) {
				t.Errorf("got codec %q type %q len %d, want %q %q %d", de.Codec, de.Type, de.Len, tc.codec, tc.typ, len(tc.in))
			}
			if de.Err == nil || !errors.Is(err, de.Err) {
				t.Errorf("got Err %v, which the error does not wrap", de.Err)
			}
			if got := errors.Is(err, codec.ErrLength); got != tc.isLength {
				t.Errorf("errors.Is(err, ErrLength) = %v, want %v", got, tc.isLength)
			}
			msg := err.Error()
			for _, want := range []string{tc.codec, tc.typ, fmt.Sprintf("%d bytes", len(tc.in)), de.Err.Error()} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not name %q", msg, want)
				}
			}
		})
	}
}

// errOf returns c's Decode error alone.
func errOf[T any](c codec.Codec[T]) func([]byte) error {
	return func(b []byte) error {
		_, err := c.Decode(b)
		return err
	}
}

// TestDecodeKeepsNothing checks that decoded values do not alias the
// input, which the runtime reuses.
func TestDecodeKeepsNothing(t *testing.T) {
	in := []byte(`{"user_id":"u1","ip_address":"1.2.3.4"}`)
	ev, err := codec.JSON[event]().Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte("abc")
	b, _ := codec.Bytes().Decode(raw)
	s, _ := codec.String().Decode(raw)
	for i := range in {
		in[i] = 'x'
	}
	raw[0] = 'x'
	if ev.UserID != "u1" || ev.IP != "1.2.3.4" {
		t.Errorf("json: got %+v after the input changed, want user_id u1, ip 1.2.3.4", ev)
	}
	if string(b) != "abc" || s != "abc" {
		t.Errorf("got bytes %q, string %q after the input changed, want abc", b, s)
	}
}

func TestNewDecodeError(t *testing.T) {
	err := codec.NewDecodeError[event]("csv", []byte("a,b"), errors.New("2 fields, want 7"))
	if got, want := err.Error(), "codec: decode 3 bytes of csv into codec_test.event: 2 fields, want 7"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// FuzzDecode feeds arbitrary bytes to every decoder: each either fails with
// a *DecodeError or returns a value that encodes again.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"user_id":"u","event_time":1}`))
	f.Add([]byte{0x08, 0x01, 0x10, 0x02})
	f.Add(make([]byte, 8))
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzOne(t, codec.JSON[event](), b)
		fuzzOne(t, codec.Proto[*timestamppb.Timestamp](), b)
		fuzzOne(t, codec.Int64(), b)
		fuzzOne(t, codec.Float64(), b)
	})
}

func fuzzOne[T any](t *testing.T, c codec.Codec[T], b []byte) {
	v, err := c.Decode(b)
	if err != nil {
		var de *codec.DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("%s: got %T %v, want a *codec.DecodeError", c.Name, err, err)
		}
		return
	}
	if _, err := c.Encode(nil, v); err != nil {
		t.Fatalf("%s: decoded %x but cannot encode it again: %v", c.Name, b, err)
	}
}

func ExampleInt64() {
	c := codec.Int64()
	neg, _ := c.Encode(nil, -2)
	pos, _ := c.Encode(nil, 3)
	fmt.Printf("%x %x %d\n", neg, pos, bytes.Compare(neg, pos))

	_, err := c.Decode(neg[:7])
	fmt.Println(err)
	// Output:
	// 7ffffffffffffffe 8000000000000003 -1
	// codec: decode 7 bytes of int64 into int64: codec: not 8 bytes
}

func ExampleJSON() {
	c := codec.JSON[event]()
	b, _ := c.Encode(nil, event{UserID: "u1", EventType: "view", EventTime: 7})
	fmt.Println(string(b))

	_, err := c.Decode(b[:10])
	var de *codec.DecodeError
	fmt.Println(errors.As(err, &de), de.Codec, de.Type, de.Len)
	// Output:
	// {"user_id":"u1","page_id":"","ad_id":"","ad_type":"","event_type":"view","event_time":7,"ip_address":""}
	// true json codec_test.event 10
}

// BenchmarkJSON measures the JSON codec on a YSB event, appending to a
// reused buffer as the runtime does (see the package doc for the libraries
// compared).
func BenchmarkJSON(b *testing.B) {
	c := codec.JSON[event]()
	data, err := c.Encode(nil, ysbEvent)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			if buf, err = c.Encode(buf[:0], ysbEvent); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
