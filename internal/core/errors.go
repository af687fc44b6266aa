package core

import "errors"

// Errors returned by the runtime to operators and callers.
var (
	// ErrNotFound is returned by State.Get for a key that has no value.
	ErrNotFound = errors.New("sluice: not found")
	// ErrUnknownStream is returned by Produce for a stream the operator did
	// not declare in Metadata.Outputs, or by Runtime.Produce for a stream no
	// operator reads or writes.
	ErrUnknownStream = errors.New("sluice: unknown stream")
	// ErrRecordTooLarge is returned by Produce for a record larger than
	// the node's MaxRecordBytes (key, value and headers): such a record
	// could not cross to another node.
	ErrRecordTooLarge = errors.New("sluice: record too large")
	// ErrStopped is returned by calls made after the runtime stopped.
	ErrStopped = errors.New("sluice: stopped")
	// ErrTransient marks an error from Poll or Flush that a retry may
	// cure (a broker that is down): wrapped in the returned error, it makes
	// the runtime record the error in the instance's status and retry with
	// backoff instead of restarting the instance.
	ErrTransient = errors.New("sluice: transient failure")
	// ErrBadRecord marks an error from ProcessRecord that no retry can
	// cure: the record itself is bad (it does not decode, a field is
	// missing). Wrapped in the returned error, it makes the runtime undo
	// the attempt and send the record to the dead-letter stream at once,
	// with the error as sluice-error and sluice-attempts 1, instead of
	// restarting the instance and trying again (RestartPolicy.
	// DeadLetterAfter). It does not count towards failing the instance.
	ErrBadRecord = errors.New("sluice: bad record")
)
