package window

import (
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// Output headers of event-time window results.
const (
	// HeaderStart holds the window's start, in Unix nanoseconds (decimal).
	HeaderStart = "window-start"
	// HeaderEnd holds the window's end (exclusive), in Unix nanoseconds.
	HeaderEnd = "window-end"
)

// Bounds returns the window [start, end) a result record of an event-time
// window operator is for, from its headers.
func Bounds(rec sdk.Record) (start, end time.Time, ok bool) {
	s, ok1 := rec.Header(HeaderStart)
	e, ok2 := rec.Header(HeaderEnd)
	if !ok1 || !ok2 {
		return time.Time{}, time.Time{}, false
	}
	sn, err1 := strconv.ParseInt(s, 10, 64)
	en, err2 := strconv.ParseInt(e, 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}, time.Time{}, false
	}
	return time.Unix(0, sn), time.Unix(0, en), true
}

// State keys (and event-timer keys, the same bytes as a string):
//
//	tag | uvarint(len key) | key [| start | end]
//
// tag is 'k' for a record key's tumbling or hopping windows (one entry
// holding all of them, see encodeKeyWindows, and one timer), 's' for a
// session, 'c' for a count window and 'g' for the global window; start
// and end are Unix nanoseconds with the sign bit flipped, 8 bytes
// big-endian, so a key's sessions sort by start.
const (
	tagKeyWindows = 'k'
	tagSession    = 's'
	tagCount      = 'c'
	tagGlobal     = 'g'
)

// errCorruptKey is returned for a timer key the operator did not write.
var errCorruptKey = errors.New("window: corrupt window key")

// keyPrefix returns tag | uvarint(len key) | key.
func keyPrefix(tag byte, key []byte) []byte {
	return appendKeyPrefix(make([]byte, 0, 1+binary.MaxVarintLen64+len(key)+16), tag, key)
}

// appendKeyPrefix appends tag | uvarint(len key) | key to dst.
func appendKeyPrefix(dst []byte, tag byte, key []byte) []byte {
	dst = append(dst, tag)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	return append(dst, key...)
}

// windowKey returns the state key of window [start, end) of key.
func windowKey(tag byte, key []byte, start, end time.Time) []byte {
	return appendWindowKey(make([]byte, 0, 1+binary.MaxVarintLen64+len(key)+16), tag, key, start, end)
}

// appendWindowKey appends the state key of window [start, end) of key to
// dst.
func appendWindowKey(dst []byte, tag byte, key []byte, start, end time.Time) []byte {
	dst = appendKeyPrefix(dst, tag, key)
	dst = binary.BigEndian.AppendUint64(dst, uint64(start.UnixNano())^1<<63)
	return binary.BigEndian.AppendUint64(dst, uint64(end.UnixNano())^1<<63)
}

// parseKey splits a state key into its tag, record key and (for
// sessions) bounds.
func parseKey(k []byte) (tag byte, key []byte, start, end time.Time, err error) {
	if len(k) < 2 {
		return 0, nil, start, end, errCorruptKey
	}
	tag = k[0]
	n, w := binary.Uvarint(k[1:])
	if w <= 0 || uint64(len(k)-1-w) < n {
		return 0, nil, start, end, errCorruptKey
	}
	key, rest := k[1+w:1+w+int(n)], k[1+w+int(n):]
	switch tag {
	case tagSession:
		if len(rest) != 16 {
			return 0, nil, start, end, errCorruptKey
		}
		start = time.Unix(0, int64(binary.BigEndian.Uint64(rest)^1<<63))
		end = time.Unix(0, int64(binary.BigEndian.Uint64(rest[8:])^1<<63))
	case tagKeyWindows, tagCount, tagGlobal:
		if len(rest) != 0 {
			return 0, nil, start, end, errCorruptKey
		}
	default:
		return 0, nil, start, end, errCorruptKey
	}
	return tag, key, start, end, nil
}

// Floor returns the largest multiple of d (since the Unix epoch) ≤ t: the
// start of the tumbling window of size d containing t, or of the last
// hopping window sliding by d that contains it.
func Floor(t time.Time, d time.Duration) time.Time {
	ns := t.UnixNano()
	r := ns % int64(d)
	if r < 0 {
		r += int64(d)
	}
	return time.Unix(0, ns-r)
}
