//go:build wasip1

package guest

import (
	"encoding/binary"
	"errors"
	"time"
)

// ErrBadRecord, wrapped in an error from ProcessRecord, says the record
// itself is bad: it goes to the dead-letter stream at once, without
// retries (the host's core.ErrBadRecord).
var ErrBadRecord = errors.New("bad record")

// Record is one input record. Its slices and Stream are valid only
// during the call.
type Record struct {
	Stream    string
	Key       []byte
	Value     []byte
	EventTime time.Time // zero when the record has none
	Headers   []Header
}

// Header is one record header.
type Header struct{ Key, Value string }

// Operator is what a guest implements: ProcessRecord is called once per
// input record, on one goroutine.
type Operator interface {
	ProcessRecord(ctx *Context, rec Record) error
}

// Initer is implemented by operators that prepare something on every
// (re)start of their instance (before any record). State is that of the
// instance's first key group or, after a guest restart, of the record
// being processed: Init should not write state.
type Initer interface {
	Init(ctx *Context) error
}

// TimerProcessor is implemented by operators that set processing-time
// timers (Context.SetTimer).
type TimerProcessor interface {
	ProcessTimer(ctx *Context, key string, at time.Time) error
}

// EventTimerProcessor is implemented by operators that set event-time
// timers (Context.SetEventTimer).
type EventTimerProcessor interface {
	ProcessEventTimer(ctx *Context, key string, at time.Time) error
}

// registered is the operator of this module.
var registered Operator

// Register makes op the module's operator. Call it from an init
// function.
func Register(op Operator) { registered = op }

// Context is the running call's view of the instance: state, timers,
// output and event time. It is valid only during the call.
type Context struct {
	out    []byte // the emit batch
	getBuf []byte
	failed bool // emit was refused: the call fails
}

// ctx is the one Context (calls never overlap).
var ctx Context

// maxBatch is the size at which the emit batch goes to the host before
// the call ends.
const maxBatch = 1 << 20

// Get returns the value of key in the current key group. The slice is
// valid until the next Get.
func (c *Context) Get(key []byte) ([]byte, bool) {
	if cap(c.getBuf) == 0 {
		c.getBuf = make([]byte, 256)
	}
	for {
		buf := c.getBuf[:cap(c.getBuf)]
		n := stateGet(ptr(key), uint32(len(key)), ptr(buf), uint32(len(buf)))
		switch {
		case n < 0:
			return nil, false
		case int(n) <= len(buf):
			return buf[:n], true
		}
		c.getBuf = make([]byte, n)
	}
}

// Set stores value under key in the current key group.
func (c *Context) Set(key, value []byte) {
	stateSet(ptr(key), uint32(len(key)), ptr(value), uint32(len(value)))
}

// Delete removes key from the current key group.
func (c *Context) Delete(key []byte) { stateDelete(ptr(key), uint32(len(key))) }

// Produce sends a record with key and value to stream, which must be one
// of the operator's outputs; its event time is the input's. It is
// delivered if the call succeeds.
func (c *Context) Produce(stream string, key, value []byte) {
	c.ProduceRecord(stream, Record{Key: key, Value: value})
}

// ProduceRecord sends rec (Stream is ignored) to stream.
func (c *Context) ProduceRecord(stream string, rec Record) {
	b := c.out
	b = binary.LittleEndian.AppendUint32(b, uint32(len(stream)))
	b = append(b, stream...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rec.Key)))
	b = append(b, rec.Key...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rec.Value)))
	b = append(b, rec.Value...)
	var et int64
	if !rec.EventTime.IsZero() {
		et = rec.EventTime.UnixNano()
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(et))
	n := 0
	for _, h := range rec.Headers {
		n += 8 + len(h.Key) + len(h.Value)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	for _, h := range rec.Headers {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h.Key)))
		b = append(b, h.Key...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h.Value)))
		b = append(b, h.Value...)
	}
	c.out = b
	if len(b) >= maxBatch {
		c.flush()
	}
}

// flush hands the emit batch to the host.
func (c *Context) flush() {
	if len(c.out) == 0 {
		return
	}
	if emit(ptr(c.out), uint32(len(c.out))) != 0 {
		c.failed = true
	}
	c.out = c.out[:0]
}

// SetTimer arranges for ProcessTimer(key, at) at or after at.
func (c *Context) SetTimer(key string, at time.Time) {
	setTimer(strPtr(key), uint32(len(key)), at.UnixNano(), timerProcessing)
}

// DeleteTimer removes the processing-time timer key.
func (c *Context) DeleteTimer(key string) {
	deleteTimer(strPtr(key), uint32(len(key)), timerProcessing)
}

// SetEventTimer arranges for ProcessEventTimer(key, at) once the
// watermark reaches at.
func (c *Context) SetEventTimer(key string, at time.Time) {
	setTimer(strPtr(key), uint32(len(key)), at.UnixNano(), timerEvent)
}

// DeleteEventTimer removes the event-time timer key.
func (c *Context) DeleteEventTimer(key string) {
	deleteTimer(strPtr(key), uint32(len(key)), timerEvent)
}

// Watermark returns the instance's watermark, the zero Time before any.
func (c *Context) Watermark() time.Time {
	if n := watermark(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Log writes msg to the operator's logger at a log/slog level (-4
// debug, 0 info, 4 warn, 8 error).
func (c *Context) Log(level int, msg string) { logMsg(int32(level), strPtr(msg), uint32(len(msg))) }

// GetInt64 returns the int64 stored under key (8 bytes big-endian, as
// the Go SDK's sdk.GetInt64), 0 if none.
func GetInt64(c *Context, key []byte) int64 {
	v, ok := c.Get(key)
	if !ok || len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

// PutInt64 stores n under key as sdk.PutInt64 does.
func PutInt64(c *Context, key []byte, n int64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n))
	c.Set(key, b[:])
}
