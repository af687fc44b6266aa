package core

import (
	"errors"
	"time"
)

// ErrEndOfStream, returned (possibly wrapped) by a Source's Poll, says the
// source has finished: it will produce nothing more. The records it
// produced in that Poll are kept; end-of-stream then flows downstream on
// every output edge after them, in order, and an operator whose inputs have
// all ended sees its watermark pass every event time (all its event-time
// timers fire) and finishes in turn.
var ErrEndOfStream = errors.New("sluice: end of stream")

// EventTimerProcessor is implemented by operators that set event-time timers
// with Context.SetEventTimer.
type EventTimerProcessor interface {
	// ProcessEventTimer is called once the instance's watermark reaches at
	// (no record with an event time before at will arrive any more), on the
	// key group the timer was set in. Failures are handled as for
	// ProcessRecord.
	ProcessEventTimer(ctx Context, key string, at time.Time) error
}

// EventTime is the event-time half of Context.
type EventTime interface {
	// SetEventTimer arranges for ProcessEventTimer(key, at) to be called once
	// the instance's watermark reaches at. Setting a timer with an existing
	// key replaces it. Event-time timers are stored with the instance's
	// state like processing-time timers (SetTimer), in a separate key space:
	// the same key may name one timer of each kind. The operator must
	// implement EventTimerProcessor.
	SetEventTimer(key string, at time.Time) error
	// DeleteEventTimer removes the event-time timer with that key, if any.
	DeleteEventTimer(key string) error
	// Watermark returns the instance's current watermark: the minimum over
	// its input edges of the watermarks received (a source: the watermark it
	// has emitted). It is the zero Time before any watermark arrived.
	Watermark() time.Time
}
