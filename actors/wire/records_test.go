package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
)

func TestRecordsRoundTrip(t *testing.T) {
	recs := []core.Record{
		{},
		{Key: []byte("k"), Value: []byte("value"), EventTime: time.Unix(1700000000, 123)},
		{Key: []byte{}, Value: nil, Headers: []core.Header{{Key: "traceparent", Value: "00-abc"}, {Key: "", Value: ""}}},
		{Key: bytes.Repeat([]byte("x"), 300), Value: bytes.Repeat([]byte("y"), 70000), EventTime: time.Unix(-5, 0)},
	}
	got, err := DecodeRecords(AppendRecords(nil, recs))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) {
		t.Fatalf("decoded %d records, want %d", len(got), len(recs))
	}
	for i := range recs {
		w, g := recs[i], got[i]
		if !bytes.Equal(w.Key, g.Key) || !bytes.Equal(w.Value, g.Value) || !w.EventTime.Equal(g.EventTime) || len(w.Headers) != len(g.Headers) {
			t.Fatalf("record %d: got %+v, want %+v", i, g, w)
		}
		if len(w.Headers) > 0 && !reflect.DeepEqual(w.Headers, g.Headers) {
			t.Fatalf("record %d headers: got %v, want %v", i, g.Headers, w.Headers)
		}
	}
}

func TestDecodeRecordsRejectsCorruptInput(t *testing.T) {
	good := AppendRecords(nil, []core.Record{{Key: []byte("key"), Value: []byte("value")}})
	for i := 1; i < len(good); i++ {
		if _, err := DecodeRecords(good[:i]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: err = %v, want ErrCorrupt", i, err)
		}
	}
	if _, err := DecodeRecords([]byte{0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("absurd header count: err = %v, want ErrCorrupt", err)
	}
}

func FuzzDecodeRecords(f *testing.F) {
	f.Add(AppendRecords(nil, []core.Record{{Key: []byte("k"), Value: []byte("v"), Headers: []core.Header{{Key: "a", Value: "b"}}}}))
	f.Add([]byte{})
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := DecodeRecords(b)
		if err != nil {
			return
		}
		// Whatever decodes must encode back to the same records.
		again, err := DecodeRecords(AppendRecords(nil, recs))
		if err != nil {
			t.Fatalf("re-decoding: %v", err)
		}
		if len(again) != len(recs) {
			t.Fatalf("re-decoded %d records, want %d", len(again), len(recs))
		}
	})
}
