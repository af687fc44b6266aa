package http

import "errors"

// Errors of the connector; the errors of NewSource, NewSink, Init, Flush
// and Commit wrap them (with sdk.ErrTransient where a retry may succeed).
var (
	// ErrConfig is a configuration that cannot work; the error wrapping
	// it names the field and the fix.
	ErrConfig = errors.New("http: bad configuration")
	// ErrListen: the source could not listen on its address (in use, or
	// not this host's).
	ErrListen = errors.New("http: cannot listen")
	// ErrDelivery: the sink's receiver did not accept a batch within
	// SinkConfig.MaxAttempts attempts (5xx, 429, time-outs, connection
	// failures). Transient: the batch is kept and sent again.
	ErrDelivery = errors.New("http: batch not delivered")
)
