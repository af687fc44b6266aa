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

// ErrNotEventTimerProcessor is returned by SetEventTimer in an operator
// that does not implement EventTimerProcessor (nothing could fire the
// timer).
var ErrNotEventTimerProcessor = errors.New("sluice: the operator does not implement EventTimerProcessor (ProcessEventTimer)")

// DefaultWatermarkInterval is how often a source emits its watermark at
// most when WatermarkStrategy.Interval is 0.
const DefaultWatermarkInterval = 100 * time.Millisecond

// WatermarkStrategy says how a source derives its watermarks from the
// event times of the records it produces (Metadata.Watermarks).
//
// Each source instance tracks the largest event time it produced (a record
// produced with a zero EventTime gets the time its Poll started, so a
// source that sets none runs on ingestion time) and, after a Poll, at most
// every Interval, emits the watermark max − OutOfOrderness on every output
// edge, in order after the records. A watermark never goes back; it is
// stored with the instance's state, so a restarted or moved instance
// resumes from it. A source that produced nothing for Idleness is marked
// idle: its readers stop waiting for it until it produces again.
//
// A Source that implements WatermarkGenerator computes its watermarks
// itself (a custom strategy); Interval and Idleness still apply.
type WatermarkStrategy struct {
	// OutOfOrderness bounds how far an event time may be behind the
	// largest one produced before it; 0 means event times never go back
	// (monotonic). A record later than that is late downstream.
	OutOfOrderness time.Duration `json:"outOfOrderness,omitempty"`
	// Idleness is how long a source instance producing nothing waits
	// before it is marked idle; 0 means never.
	Idleness time.Duration `json:"idleness,omitempty"`
	// Interval is the least time between two watermarks of an instance;
	// 0 means DefaultWatermarkInterval.
	Interval time.Duration `json:"interval,omitempty"`
}

// Equal reports whether w and o are the same strategy (both nil, or equal
// fields).
func (w *WatermarkStrategy) Equal(o *WatermarkStrategy) bool {
	if w == nil || o == nil {
		return w == o
	}
	return *w == *o
}

// WatermarkGenerator is implemented by sources with a custom watermark
// strategy (punctuation in the data, a watermark read from the external
// system).
type WatermarkGenerator interface {
	// CurrentWatermark is called after each successful Poll, in the same
	// attempt (State is the instance's first key group), and returns the
	// source's watermark: no record with an earlier event time will be
	// produced any more. The zero Time means none yet. A watermark earlier
	// than one returned before is ignored (logged naming the operator):
	// watermarks never go back.
	CurrentWatermark(ctx Context) time.Time
}

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
