package actors

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/core"
)

// RecentDeadLetters is how many of an operator's latest dead letters a
// node keeps to show (OperatorStatus.RecentDeadLetters); older ones are
// only in the dead-letter stream.
const RecentDeadLetters = 5

// deadLetterValueMax is how much of a dead letter's value is kept.
const deadLetterValueMax = 256

// DeadLetter is a record or timer an instance sent to its operator's
// dead-letter stream, as the node keeps it to show.
type DeadLetter struct {
	Time  time.Time
	Node  string
	Index int
	Key   []byte
	// Value is at most the first 256 bytes of the record's value;
	// ValueBytes is its whole length.
	Value      []byte
	ValueBytes int
	// Headers are the record's, with those the runtime adds (the error,
	// the attempts, the operator, the instance and the stream).
	Headers []core.Header
}

// deadLetterLog keeps the latest RecentDeadLetters dead letters of each
// operator on a node.
type deadLetterLog struct {
	mu   sync.Mutex // a leaf
	byOp map[string][]DeadLetter
}

// add keeps dl (a copy of its key, headers and truncated value) as op's
// latest dead letter.
func (l *deadLetterLog) add(op, node string, index int, rec core.Record) {
	dl := DeadLetter{Time: time.Now(), Node: node, Index: index, Key: append([]byte(nil), rec.Key...), ValueBytes: len(rec.Value),
		Value: append([]byte(nil), rec.Value[:min(len(rec.Value), deadLetterValueMax)]...), Headers: append([]core.Header(nil), rec.Headers...)}
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

// recent returns op's latest dead letters, newest first.
func (l *deadLetterLog) recent(op string) []DeadLetter {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.byOp[op]
	out := make([]DeadLetter, len(kept))
	for i, dl := range kept {
		out[len(kept)-1-i] = dl
	}
	return out
}

// forget drops the dead letters of operators not in keep (killed ones).
func (l *deadLetterLog) forget(keep map[string]*OperatorStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for op := range l.byOp {
		if keep[op] == nil {
			delete(l.byOp, op)
		}
	}
}
