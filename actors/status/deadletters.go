package status

import (
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/core"
)

// RecentDeadLetters is how many of an operator's latest dead letters a
// node keeps to show (OperatorStatus.RecentDeadLetters); older ones are
// only in the dead-letter stream.
const RecentDeadLetters = 5

// What a node keeps of a dead letter to show, so that a record with a
// 4 MB key costs its viewers no more than any other: the first
// deadLetterValueMax bytes of its key and value, at most
// deadLetterHeadersMax headers, each cut to deadLetterHeaderMax bytes.
// The dead-letter stream has the whole record.
const (
	deadLetterValueMax   = 256
	deadLetterHeadersMax = 32
	deadLetterHeaderMax  = 1024
)

// ErrorTextMax bounds an error's text kept in a status (LastError,
// FailedReason, a dead letter's error header): an operator's error that
// quotes a huge record is cut, saying how long it was.
const ErrorTextMax = 4096

// DeadLetter is a record or timer an instance sent to its operator's
// dead-letter stream, as the node keeps it to show.
type DeadLetter struct {
	Time  time.Time
	Node  string
	Index int
	// Key is at most the first 256 bytes of the record's key; KeyBytes is
	// its whole length.
	Key      []byte
	KeyBytes int
	// Value is at most the first 256 bytes of the record's value;
	// ValueBytes is its whole length.
	Value      []byte
	ValueBytes int
	// Headers are the record's, with those the runtime adds (the error,
	// the attempts, the operator, the instance and the stream): at most
	// 32, the runtime's first, each key and value cut to 1 KiB (see
	// ClipText).
	Headers []core.Header
}

// DeadLetters keeps the latest RecentDeadLetters dead letters of each
// operator on a node. The zero value is ready; it is safe for concurrent
// use.
type DeadLetters struct {
	mu   sync.Mutex // a leaf
	byOp map[string][]DeadLetter
}

// Add keeps a bounded copy of rec as op's latest dead letter; runtime are
// the headers the runtime added, which are kept before the record's own.
func (l *DeadLetters) Add(op, node string, index int, rec core.Record, runtime []core.Header) {
	dl := DeadLetter{Time: time.Now(), Node: node, Index: index,
		Key: append([]byte(nil), rec.Key[:min(len(rec.Key), deadLetterValueMax)]...), KeyBytes: len(rec.Key),
		Value: append([]byte(nil), rec.Value[:min(len(rec.Value), deadLetterValueMax)]...), ValueBytes: len(rec.Value)}
	for _, h := range slices.Concat(runtime, rec.Headers)[:min(len(runtime)+len(rec.Headers), deadLetterHeadersMax)] {
		dl.Headers = append(dl.Headers, core.Header{Key: ClipText(h.Key, deadLetterHeaderMax), Value: ClipText(h.Value, deadLetterHeaderMax)})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byOp == nil {
		l.byOp = map[string][]DeadLetter{}
	}
	recent := append(l.byOp[op], dl)
	if len(recent) > RecentDeadLetters {
		recent = append([]DeadLetter(nil), recent[len(recent)-RecentDeadLetters:]...)
	}
	l.byOp[op] = recent
}

// Recent returns op's latest dead letters, newest first.
func (l *DeadLetters) Recent(op string) []DeadLetter {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.byOp[op]
	out := make([]DeadLetter, len(kept))
	for i, dl := range kept {
		out[len(kept)-1-i] = dl
	}
	return out
}

// Forget drops the dead letters of operators not in keep (killed ones).
func (l *DeadLetters) Forget(keep map[string]*OperatorStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for op := range l.byOp {
		if keep[op] == nil {
			delete(l.byOp, op)
		}
	}
}

// ClipText returns s cut to at most max bytes (at a character boundary)
// and a note of its whole length when it is longer.
func ClipText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes in all)", len(s))
}
