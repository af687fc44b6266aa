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
	// ErrStopped is returned by calls made after the runtime stopped.
	ErrStopped = errors.New("sluice: stopped")
)
