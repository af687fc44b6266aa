package wire

import (
	"bytes"
	"testing"
	"time"
	"unsafe"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/sluicehq/sluice/internal/core"
)

func frameRecords() []core.Record {
	return []core.Record{
		{},
		{Key: []byte("k"), Value: []byte("value"), EventTime: time.Unix(1700000000, 123)},
		{Key: []byte{}, Headers: []core.Header{{Key: "traceparent", Value: "00-abc"}, {Key: "", Value: ""}}},
		{Key: bytes.Repeat([]byte("x"), 300), Value: bytes.Repeat([]byte("y"), 70000), EventTime: time.Unix(-5, 0)},
	}
}

func frameHeader() *RecordBatch {
	return &RecordBatch{Stream: "words", Routing: 2, From: actor.NewPID("127.0.0.1:1", "op/gen/0.0"), Slot: 3,
		Target: "op/count/0.1@abc", SentUnixNano: 42, Seq: 7, FromOp: "gen", FromIndex: 1,
		Control: &Control{Kind: 1, Checkpoint: 9}, Generation: 4}
}

// sameBatch fails t unless got has want's fields and, packed, recs.
func sameBatch(t *testing.T, got, want *RecordBatch, recs []core.Record) {
	t.Helper()
	if !bytes.Equal(got.Records, AppendRecords(nil, recs)) {
		t.Fatalf("records differ from AppendRecords's (%d bytes, want %d)", len(got.Records), len(AppendRecords(nil, recs)))
	}
	head := proto.Clone(got).(*RecordBatch)
	head.Records = nil
	if !proto.Equal(head, want) {
		t.Fatalf("fields: got %v, want %v", head, want)
	}
}

// TestFrameIsARecordBatchOnTheWire: a frame's bytes are a RecordBatch's,
// and a RecordBatch's bytes make a frame, through protoactor's way of
// decoding (the type found by name, then proto.Unmarshal).
func TestFrameIsARecordBatchOnTheWire(t *testing.T) {
	recs := frameRecords()
	f := EncodeFrame(frameHeader(), recs)
	enc, err := proto.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := proto.Size(f); got != len(enc) {
		t.Fatalf("proto.Size = %d, marshalled %d bytes", got, len(enc))
	}
	if got := RecordsSize(recs); got != len(AppendRecords(nil, recs)) {
		t.Fatalf("RecordsSize = %d, AppendRecords wrote %d bytes", got, len(AppendRecords(nil, recs)))
	}
	if cap(enc) != len(enc) {
		t.Fatalf("encoded into %d bytes of a %d-byte buffer: the size was not exact", len(enc), cap(enc))
	}

	var plain RecordBatch
	if err := proto.Unmarshal(enc, &plain); err != nil {
		t.Fatalf("a frame's bytes are not a RecordBatch: %v", err)
	}
	sameBatch(t, &plain, frameHeader(), recs)

	name := proto.MessageName(f)
	if name != "sluice.wire.BatchFrame" {
		t.Fatalf("type name %q", name)
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range [][]byte{enc, mustMarshal(t, withRecords(frameHeader(), recs))} {
		pm := mt.New().Interface()
		if err := proto.Unmarshal(in, pm); err != nil {
			t.Fatal(err)
		}
		got, err := pm.(*BatchFrame).Batch()
		if err != nil {
			t.Fatal(err)
		}
		sameBatch(t, got, frameHeader(), recs)
		if !within(got.Records, in) {
			t.Fatal("the decoded records were copied, not left in the received buffer")
		}
	}
}

// TestFrameMarshalsWithoutCopying: proto.Marshal returns the buffer
// EncodeFrame filled, and a frame not marshalled still decodes.
func TestFrameMarshalsWithoutCopying(t *testing.T) {
	f := EncodeFrame(frameHeader(), frameRecords())
	enc, err := proto.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.SliceData(enc) != unsafe.SliceData(f.enc) {
		t.Fatal("proto.Marshal copied the frame")
	}
	again, err := proto.MarshalOptions{}.MarshalAppend([]byte("prefix"), f)
	if err != nil || !bytes.Equal(again[6:], enc) {
		t.Fatalf("MarshalAppend after a prefix: %v", err)
	}
	got, err := f.Batch()
	if err != nil {
		t.Fatal(err)
	}
	sameBatch(t, got, frameHeader(), frameRecords())
	if _, err := proto.Marshal(&BatchFrame{}); err == nil {
		t.Fatal("marshalled a frame EncodeFrame did not make")
	}
	clone, err := proto.Marshal(proto.Clone(f))
	if err != nil || !bytes.Equal(clone, enc) {
		t.Fatalf("a clone of the frame marshals to %d bytes (%v), want the frame's %d", len(clone), err, len(enc))
	}
}

// TestFrameDecodesRecordsAnywhere: other encoders may put the records
// field first, or twice (the last wins, as for any protobuf scalar).
func TestFrameDecodesRecordsAnywhere(t *testing.T) {
	recs := frameRecords()
	packed := AppendRecords(nil, recs)
	head := mustMarshal(t, frameHeader())
	field := func(v []byte) []byte {
		b := protowire.AppendTag(nil, recordsField, protowire.BytesType)
		return protowire.AppendBytes(b, v)
	}
	cases := map[string][]byte{
		"first":  append(field(packed), head...),
		"twice":  append(append(field([]byte("stale")), head...), field(packed)...),
		"middle": append(append(head[:len(head):len(head)], field(packed)...), mustMarshal(t, &RecordBatch{Generation: 4})...),
	}
	for name, in := range cases {
		f := new(BatchFrame)
		if err := proto.Unmarshal(in, f); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := f.Batch()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameBatch(t, got, frameHeader(), recs)
	}
	empty := new(BatchFrame)
	if err := proto.Unmarshal(head, empty); err != nil {
		t.Fatal(err)
	}
	if got, _ := empty.Batch(); len(got.Records) != 0 || got.Stream != "words" {
		t.Fatalf("a batch without records: %v", got)
	}
}

func TestFrameRejectsCorruptInput(t *testing.T) {
	enc, err := proto.Marshal(EncodeFrame(frameHeader(), frameRecords()))
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{1, 10, len(enc) / 2, len(enc) - 1} {
		if err := proto.Unmarshal(enc[:cut], new(BatchFrame)); err == nil {
			t.Fatalf("a frame cut to %d of %d bytes decoded", cut, len(enc))
		}
	}
	if _, err := new(BatchFrame).Batch(); err == nil {
		t.Fatal("an empty frame gave a batch")
	}
}

func FuzzFrame(f *testing.F) {
	f.Add(mustMarshal(f, EncodeFrame(frameHeader(), frameRecords())))
	f.Add([]byte{})
	f.Add([]byte{0x2a, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		var plain RecordBatch
		plainErr := proto.Unmarshal(b, &plain)
		fr := new(BatchFrame)
		frameErr := proto.Unmarshal(b, fr)
		if (plainErr == nil) != (frameErr == nil) {
			t.Fatalf("RecordBatch: %v; BatchFrame: %v", plainErr, frameErr)
		}
		if frameErr != nil {
			return
		}
		got, err := fr.Batch()
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, &plain) {
			t.Fatalf("frame %v, RecordBatch %v", got, &plain)
		}
	})
}

func withRecords(rb *RecordBatch, recs []core.Record) *RecordBatch {
	rb.Records = AppendRecords(nil, recs)
	return rb
}

func mustMarshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// within reports whether sub lies in buf's memory.
func within(sub, buf []byte) bool {
	if len(sub) == 0 {
		return true
	}
	s, b := uintptr(unsafe.Pointer(unsafe.SliceData(sub))), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return s >= b && s+uintptr(len(sub)) <= b+uintptr(len(buf))
}

// BenchmarkBatchCrossing is a batch's way from one node's producer to the
// other's instance, without the network: encode, marshal (protoactor's
// serializer), unmarshal (the receiver's), decode the records. "generated"
// is a RecordBatch with its records packed first (as before BatchFrame),
// "frame" a BatchFrame. Each batch holds 256 records of a word-count key
// and an 8-byte count, as the cross-node benchmark sends.
func BenchmarkBatchCrossing(b *testing.B) {
	recs := make([]core.Record, 256)
	for i := range recs {
		recs[i] = core.Record{Key: []byte("k" + string(rune('a'+i%26)) + "12345"), Value: make([]byte, 8)}
	}
	out := make([]core.Record, 0, len(recs))
	check := func(b *testing.B, got []core.Record, err error) {
		if err != nil || len(got) != len(recs) {
			b.Fatalf("decoded %d records: %v", len(got), err)
		}
	}
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rb := frameHeader()
			rb.Records = AppendRecords(nil, recs)
			enc, err := proto.Marshal(rb)
			if err != nil {
				b.Fatal(err)
			}
			var got RecordBatch
			if err := proto.Unmarshal(enc, &got); err != nil {
				b.Fatal(err)
			}
			decoded, err := AppendDecoded(out[:0], got.Records)
			check(b, decoded, err)
		}
	})
	b.Run("frame", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			enc, err := proto.Marshal(EncodeFrame(frameHeader(), recs))
			if err != nil {
				b.Fatal(err)
			}
			var f BatchFrame
			if err := proto.Unmarshal(enc, &f); err != nil {
				b.Fatal(err)
			}
			got, err := f.Batch()
			if err != nil {
				b.Fatal(err)
			}
			decoded, err := AppendDecoded(out[:0], got.Records)
			check(b, decoded, err)
		}
	})
}
