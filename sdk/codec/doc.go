// Package codec turns typed values into the bytes of records and state and
// back: a Codec[T] is a name and two functions, Encode (appending to a
// buffer) and Decode. It is the serialisation layer of the typed API
// (sdk/state, and the typed stream builder of issue 33), and a leaf: it
// imports neither the runtime nor the SDK, only the two encoding libraries.
//
//	c := codec.JSON[Event]()
//	b, err := c.Encode(buf[:0], ev)  // Produce(…, Record{Value: b})
//	ev, err = c.Decode(rec.Value)     // a *DecodeError if it does not decode
//
// A failed Decode returns a *DecodeError naming the codec, the Go type and
// the input's length, wrapping the decoder's error: returned from
// ProcessRecord, it is what the record's dead letter carries in its
// sluice-error header ("codec: decode 13 bytes of json into main.Event:
// …"). Callers branch on it with errors.As, and on ErrLength with
// errors.Is.
//
// # Codecs
//
//   - JSON[T]: any type encoding/json handles, on
//     github.com/segmentio/encoding (see below).
//   - Proto[T]: a generated protobuf message type (*pb.Msg), on
//     google.golang.org/protobuf; new messages are made by reflection on
//     T's descriptor, so no constructor is passed.
//   - Bytes, String: the bytes as they are.
//   - Int64, Uint64, Float64: 8 big-endian bytes laid out so that
//     bytes.Compare orders them as the numbers (Int64 flips the sign bit),
//     which is what range scans over keys need.
//
// Decoded values never alias the input: the runtime reuses a record's
// bytes once its callback returns.
//
// # Choice of JSON library
//
// Measured on a Yahoo Streaming Benchmark ad event (seven fields: six
// strings of 4 to 36 bytes and an int64; 235 bytes of JSON) by
// internal/bench/jsoncodec, a module of its own, with Go 1.26.8 on the
// 2-core development machine under load (load average about 17), 10 runs
// of 500 ms each, medians. cpu-ns/op is the process's CPU time per op
// (GC included), steadier than ns/op on a loaded machine:
//
//	encode              ns/op  cpu-ns/op  B/op  allocs/op
//	encoding/json         917        529   240          1
//	goccy/go-json 0.12.0  529        314   240          1
//	segmentio 0.5.4       235        113     0          0   Append to a reused buffer
//	go-json-experiment   1754       1086   240          1   (= encoding/json/v2)
//
//	decode              ns/op  cpu-ns/op  B/op  allocs/op
//	encoding/json        4419       2428   496         11
//	goccy/go-json 0.12.0 1262        606   280          7
//	segmentio 0.5.4       972        558   280          7
//	go-json-experiment   1223        780   112          1
//
// github.com/segmentio/encoding is the fastest at both: encoding is 2.8×
// goccy's CPU and 4.7× encoding/json's, without an allocation, since only
// it appends to the caller's buffer; decoding is level with goccy and 4.4×
// encoding/json. It is pure Go (no cgo; its segmentio/asm dependency has
// Go assembly with portable fallbacks) and kept (v0.5.4, March 2026).
// goccy/go-json, second, went nine months and then eleven without a
// release after v0.10.5 (January 2025), and MinIO went back to
// encoding/json over its bugs meanwhile. encoding/json/v2 needs
// GOEXPERIMENT=jsonv2 on Go 1.26; its module form, go-json-experiment,
// is slower here at both.
//
// The codec itself (BenchmarkJSON, same run): encode 271 ns/op, 0 B/op,
// 0 allocs/op; decode 787 ns/op, 168 B/op, 6 allocs/op (the six strings).
// Each call borrows its *T from a pool, as the library takes an any.
package codec
