package cqltest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Opcodes of the native protocol v4 (native_protocol_v4.spec §2.4).
const (
	opError         = 0x00
	opStartup       = 0x01
	opReady         = 0x02
	opAuthenticate  = 0x03
	opOptions       = 0x05
	opSupported     = 0x06
	opQuery         = 0x07
	opResult        = 0x08
	opPrepare       = 0x09
	opExecute       = 0x0A
	opRegister      = 0x0B
	opBatch         = 0x0D
	opAuthChallenge = 0x0E
	opAuthResponse  = 0x0F
	opAuthSuccess   = 0x10
)

// Result kinds (§4.2.5).
const (
	resultVoid     = 0x0001
	resultRows     = 0x0002
	resultPrepared = 0x0004
)

// Error codes (§9) the server answers with.
const (
	codeServer      = 0x0000
	codeProtocol    = 0x000A
	codeBadCreds    = 0x0100
	codeUnavailable = 0x1000
	codeWriteTO     = 0x1100
	codeSyntax      = 0x2000
	codeInvalid     = 0x2200
	codeUnprepared  = 0x2500
)

// Query parameter flags (§4.1.4).
const (
	flagValues        = 0x01
	flagSkipMetadata  = 0x02
	flagPageSize      = 0x04
	flagPagingState   = 0x08
	flagSerial        = 0x10
	flagTimestamp     = 0x20
	flagNamesOfValues = 0x40
)

// maxFrame bounds a request body (the spec's default is 256 MB).
const maxFrame = 256 << 20

// header is a frame header (§2): version, flags, stream, opcode, length.
type header struct {
	version, flags byte
	stream         int16
	op             byte
	length         uint32
}

func readHeader(r io.Reader) (header, error) {
	var b [9]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return header{}, err
	}
	h := header{version: b[0], flags: b[1], stream: int16(binary.BigEndian.Uint16(b[2:])), op: b[4], length: binary.BigEndian.Uint32(b[5:])}
	if h.length > maxFrame {
		return h, fmt.Errorf("frame of %d bytes", h.length)
	}
	return h, nil
}

// errShort is a request body that ends early.
var errShort = errors.New("request body too short")

// reader decodes the notations of §3 from a request body; the first
// decoding failure sticks in err.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		if r.err == nil {
			r.err = errShort
		}
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) short() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *reader) int() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) long() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *reader) string() string     { return string(r.take(int(r.short()))) }
func (r *reader) longString() string { return string(r.take(int(r.int()))) }
func (r *reader) shortBytes() []byte { return r.take(int(r.short())) }
func (r *reader) stringMap() map[string]string {
	n := int(r.short())
	m := make(map[string]string, n)
	for range n {
		k := r.string()
		m[k] = r.string()
	}
	return m
}

// value is a [value] (§3): nil with null set for a null, unset for the
// "not set" marker (-2).
type value struct {
	b           []byte
	null, unset bool
}

func (r *reader) value() value {
	n := r.int()
	switch {
	case n == -1:
		return value{null: true}
	case n == -2:
		return value{unset: true}
	case n < 0:
		r.err = fmt.Errorf("value of length %d", n)
		return value{}
	}
	return value{b: r.take(int(n))}
}

// params are the query parameters of QUERY and EXECUTE (§4.1.4).
type params struct {
	consistency uint16
	values      []value
	names       []string
	skipMeta    bool
	timestamp   int64 // microseconds; 0: none given
}

func (r *reader) params() params {
	p := params{consistency: r.short()}
	flags := r.byte()
	p.skipMeta = flags&flagSkipMetadata != 0
	if flags&flagValues != 0 {
		n := int(r.short())
		for range n {
			if flags&flagNamesOfValues != 0 {
				p.names = append(p.names, r.string())
			}
			p.values = append(p.values, r.value())
		}
	}
	if flags&flagPageSize != 0 {
		r.int()
	}
	if flags&flagPagingState != 0 {
		r.value()
	}
	if flags&flagSerial != 0 {
		r.short()
	}
	if flags&flagTimestamp != 0 {
		p.timestamp = r.long()
	}
	return p
}

// writer encodes a response body.
type writer struct{ b []byte }

func (w *writer) byte(v byte)    { w.b = append(w.b, v) }
func (w *writer) short(v uint16) { w.b = binary.BigEndian.AppendUint16(w.b, v) }
func (w *writer) int(v int32)    { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *writer) string(s string) {
	w.short(uint16(len(s)))
	w.b = append(w.b, s...)
}
func (w *writer) shortBytes(b []byte) {
	w.short(uint16(len(b)))
	w.b = append(w.b, b...)
}

// bytes writes [bytes]; nil is a null (-1).
func (w *writer) bytes(b []byte) {
	if b == nil {
		w.int(-1)
		return
	}
	w.int(int32(len(b)))
	w.b = append(w.b, b...)
}

func (w *writer) stringList(l []string) {
	w.short(uint16(len(l)))
	for _, s := range l {
		w.string(s)
	}
}

// frame returns the response frame of w's body for request h.
func (w *writer) frame(h header, op byte) []byte {
	out := make([]byte, 9, 9+len(w.b))
	out[0] = 0x80 | (h.version & 0x7f)
	binary.BigEndian.PutUint16(out[2:], uint16(h.stream))
	out[4] = op
	binary.BigEndian.PutUint32(out[5:], uint32(len(w.b)))
	return append(out, w.b...)
}

// cqlError is an ERROR response (§9): code, message and the code's extra
// fields, already encoded.
type cqlError struct {
	code  int32
	msg   string
	extra []byte
}

func (e *cqlError) Error() string { return fmt.Sprintf("cql error 0x%04x: %s", e.code, e.msg) }

func errorf(code int32, format string, args ...any) *cqlError {
	return &cqlError{code: code, msg: fmt.Sprintf(format, args...)}
}

// unavailable is the Unavailable error of consistency cl: required
// replicas, alive ones.
func unavailable(cl uint16) *cqlError {
	var w writer
	w.short(cl)
	w.int(2)
	w.int(0)
	return &cqlError{code: codeUnavailable, msg: "Cannot achieve consistency level", extra: w.b}
}

// writeTimeout is the Write_timeout error of a write at consistency cl.
func writeTimeout(cl uint16, writeType string) *cqlError {
	var w writer
	w.short(cl)
	w.int(0)
	w.int(2)
	w.string(writeType)
	return &cqlError{code: codeWriteTO, msg: "Operation timed out - received only 0 responses.", extra: w.b}
}

func (e *cqlError) body() *writer {
	var w writer
	w.int(e.code)
	w.string(e.msg)
	w.b = append(w.b, e.extra...)
	return &w
}
