package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/core"
)

// ErrCorrupt is returned by DecodeRecords for bytes that are not a valid
// packed record sequence.
var ErrCorrupt = errors.New("wire: corrupt packed records")

// AppendRecords appends recs to dst in the packed form carried by
// RecordBatch.records and Bounce.records. Each record is
//
//	uvarint(len(key)) key
//	uvarint(len(value)) value
//	varint(event time in Unix nanoseconds; 0 for the zero time)
//	uvarint(number of headers) { uvarint(len(k)) k uvarint(len(v)) v }…
func AppendRecords(dst []byte, recs []core.Record) []byte {
	if dst == nil {
		n := 0
		for _, r := range recs {
			n += len(r.Key) + len(r.Value) + 16
		}
		dst = make([]byte, 0, n)
	}
	for _, r := range recs {
		dst = binary.AppendUvarint(dst, uint64(len(r.Key)))
		dst = append(dst, r.Key...)
		dst = binary.AppendUvarint(dst, uint64(len(r.Value)))
		dst = append(dst, r.Value...)
		dst = binary.AppendVarint(dst, eventNanos(r))
		dst = binary.AppendUvarint(dst, uint64(len(r.Headers)))
		for _, h := range r.Headers {
			dst = binary.AppendUvarint(dst, uint64(len(h.Key)))
			dst = append(dst, h.Key...)
			dst = binary.AppendUvarint(dst, uint64(len(h.Value)))
			dst = append(dst, h.Value...)
		}
	}
	return dst
}

// eventNanos is r's event time as packed: Unix nanoseconds, 0 for the zero
// time.
func eventNanos(r core.Record) int64 {
	if r.EventTime.IsZero() {
		return 0
	}
	return r.EventTime.UnixNano()
}

// DecodeRecords decodes a packed record sequence. Keys and values alias b,
// which the caller must not modify afterwards.
func DecodeRecords(b []byte) ([]core.Record, error) { return AppendDecoded(nil, b) }

// AppendDecoded is DecodeRecords appending to out (a receiver passes a
// recycled chunk, so that a batch does not grow a slice of its own).
func AppendDecoded(out []core.Record, b []byte) ([]core.Record, error) {
	d := decoder{b: b}
	for len(d.b) > 0 {
		var r core.Record
		r.Key = d.bytes()
		r.Value = d.bytes()
		if t := d.varint(); t != 0 {
			r.EventTime = time.Unix(0, t)
		}
		n := d.uvarint()
		if n > uint64(len(d.b)) { // each header takes at least two bytes
			d.err = fmt.Errorf("%w: %d headers in %d bytes", ErrCorrupt, n, len(d.b))
		}
		if d.err == nil && n > 0 {
			r.Headers = make([]core.Header, n)
			for i := range r.Headers {
				r.Headers[i] = core.Header{Key: string(d.bytes()), Value: string(d.bytes())}
			}
		}
		if d.err != nil {
			return nil, d.err
		}
		out = append(out, r)
	}
	return out, nil
}

// decoder reads the primitives of the packed format, remembering the first
// error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%w: bad uvarint", ErrCorrupt)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%w: bad varint", ErrCorrupt)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: length %d exceeds the %d bytes left", ErrCorrupt, n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
