package nats

import "errors"

// Errors of the connector; the errors of Poll, Flush and Commit wrap them
// (with sdk.ErrTransient where a retry may succeed).
var (
	// ErrUnavailable: the servers cannot be reached (an outage, or a
	// wrong Connection.URL). Transient.
	ErrUnavailable = errors.New("nats: servers unavailable")
	// ErrAuthentication: the server refused the credentials or the TLS
	// handshake; the message names the setting to check. Not transient.
	ErrAuthentication = errors.New("nats: authentication failed")
	// ErrNoStream: the configured JetStream stream does not exist.
	// Transient (it may be created).
	ErrNoStream = errors.New("nats: stream not found")
	// ErrDuplicateWindow: the exactly-once sink's stream keeps
	// duplicates for less than SinkConfig.MinDuplicateWindow.
	ErrDuplicateWindow = errors.New("nats: duplicate window too short")
	// ErrPublish: the server did not acknowledge a publish.
	ErrPublish = errors.New("nats: publish not acknowledged")
)
