package core

import "time"

// Record is one data item on a stream: a key, a value, the time the event
// happened and optional headers.
//
// The runtime never modifies a record after it has been produced; an operator
// must not modify a record it receives (copy Key or Value before changing
// them), and may keep it after ProcessRecord returns.
type Record struct {
	// Key routes the record on group-by inputs and names it in logs. It may
	// be empty.
	Key []byte
	// Value is the payload.
	Value []byte
	// EventTime is when the event happened. A record produced with a zero
	// EventTime takes the event time of the record or timer being processed,
	// or, in a source, the time its Poll started (ingestion time), which
	// then counts for the source's watermarks like any other event time.
	EventTime time.Time
	// Headers carry metadata such as trace context and, on dead letters, the
	// error. Keys starting with "sluice-" are reserved for the runtime.
	Headers []Header
	// Stream is the stream the record arrived on. The runtime sets it on
	// delivery; it is ignored by Produce.
	Stream string
}

// Header is one record header.
type Header struct {
	Key   string
	Value string
}

// Header returns the value of the first header named key.
func (r Record) Header(key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value, true
		}
	}
	return "", false
}

// Reserved header keys set by the runtime on dead letters.
const (
	// HeaderError holds the error (or panic value) of the last failed attempt.
	HeaderError = "sluice-error"
	// HeaderAttempts holds the number of attempts made, in decimal.
	HeaderAttempts = "sluice-attempts"
	// HeaderOperator names the operator that gave up on the record.
	HeaderOperator = "sluice-operator"
	// HeaderInstance holds the index of the instance that gave up, in decimal.
	HeaderInstance = "sluice-instance"
	// HeaderStream names the input stream the record arrived on, or is
	// "timer" for a timer that kept failing, "event-timer" for an
	// event-time timer (the record key is the timer key).
	HeaderStream = "sluice-stream"
)
