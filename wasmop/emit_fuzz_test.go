package wasmop

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/core"
)

// appendEmit encodes one record as the guest SDK does.
func appendEmit(b []byte, stream string, rec core.Record) []byte {
	field := func(b, f []byte) []byte {
		return append(binary.LittleEndian.AppendUint32(b, uint32(len(f))), f...)
	}
	b = field(b, []byte(stream))
	b = field(b, rec.Key)
	b = field(b, rec.Value)
	var et int64
	if !rec.EventTime.IsZero() {
		et = rec.EventTime.UnixNano()
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(et))
	return field(b, encodeHeaders(nil, rec.Headers))
}

// FuzzParseEmit: any batch a guest hands over parses without panicking,
// and a batch that parses re-encodes to the same bytes.
func FuzzParseEmit(f *testing.F) {
	f.Add(appendEmit(nil, "out", core.Record{Key: []byte("k"), Value: []byte("v"), Headers: []core.Header{{Key: "h", Value: "1"}}}))
	f.Add(appendEmit(appendEmit(nil, "a", core.Record{}), "b", core.Record{Value: []byte("x")}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var again []byte
		err := parseEmit(b, func(stream []byte, rec core.Record) error {
			again = appendEmit(again, string(stream), rec)
			return nil
		})
		if err == nil && !bytes.Equal(again, b) {
			// Every field is length-prefixed: a batch that parses has
			// one encoding.
			t.Fatalf("batch %x parsed and re-encoded as %x", b, again)
		}
	})
}

func TestParseEmit(t *testing.T) {
	b := appendEmit(nil, "out", core.Record{Key: []byte("k"), Value: []byte("v"), Headers: []core.Header{{Key: "h", Value: "1"}}})
	b = appendEmit(b, "out", core.Record{Value: []byte("second")})
	var got []string
	if err := parseEmit(b, func(stream []byte, rec core.Record) error {
		got = append(got, string(stream)+":"+string(rec.Key)+"="+string(rec.Value)+"/"+string(rune('0'+len(rec.Headers))))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := "out:k=v/1 out:=second/0"; strings.Join(got, " ") != want {
		t.Fatalf("got %q, want %q", strings.Join(got, " "), want)
	}
	if err := parseEmit(b[:5], func([]byte, core.Record) error { return nil }); err == nil {
		t.Fatal("a truncated batch parsed")
	}
}
