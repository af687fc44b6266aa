package flow

import "time"

// ControlKind says what a Control is.
type ControlKind uint8

// The kinds of control records.
const (
	// Barrier N separates the records of checkpoint N (before it) from
	// those after it on one edge (see package checkpoint).
	Barrier ControlKind = iota + 1
	// Watermark tells that the producer will send no more records with an
	// event time before Control.Watermark (or, with Idle, that it sends
	// nothing for now and must not hold the receiver's watermark back).
	Watermark
	// EndOfStream tells that the producer has finished: it will send
	// nothing more on this edge.
	EndOfStream
)

// String returns the kind's name.
func (k ControlKind) String() string {
	switch k {
	case Barrier:
		return "barrier"
	case Watermark:
		return "watermark"
	case EndOfStream:
		return "end-of-stream"
	}
	return "control?"
}

// Control is a control record: it travels on an edge in order with the
// records, after those of the batch that carries it. A Producer emits it on
// every edge of the streams it produces (Emit).
type Control struct {
	Kind ControlKind
	// Checkpoint is the barrier's checkpoint id.
	Checkpoint uint64
	// Watermark is the event time the producer has passed (Watermark).
	Watermark time.Time
	// Idle marks a watermark of a producer that is idle (Watermark).
	Idle bool
}

// supersedes reports whether c, held for a frozen subscription, replaces
// the held control old: a later watermark replaces an earlier one, and
// end-of-stream replaces any watermark. Barriers are not held (a layout
// change aborts the checkpoint in progress).
func (c Control) supersedes(old *Control) bool {
	if old == nil {
		return true
	}
	if old.Kind == EndOfStream {
		return false
	}
	return c.Kind == EndOfStream || !c.Watermark.Before(old.Watermark)
}
