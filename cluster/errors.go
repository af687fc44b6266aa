package cluster

import "errors"

// Sentinel errors returned (wrapped) by Discovery implementations. Callers
// test for them with errors.Is.
var (
	// ErrInvalidMember means the Member passed to Join failed
	// Member.Validate; the wrapped message names the field and the fix.
	ErrInvalidMember = errors.New("cluster: invalid member")

	// ErrAlreadyJoined means Join was called on a Discovery that has
	// already joined.
	ErrAlreadyJoined = errors.New("cluster: already joined")

	// ErrLeft means Join was called on a Discovery after Leave; a
	// Discovery is single-use, create a new one to join again.
	ErrLeft = errors.New("cluster: discovery has left")

	// ErrUnavailable means the membership backend could not be reached
	// (connection refused, timeout, server error). Join returns it when
	// the backend is unreachable at start.
	ErrUnavailable = errors.New("cluster: backend unavailable")

	// ErrDuplicateID means another live member already uses the ID
	// passed to Join (reported by backends that can detect it).
	ErrDuplicateID = errors.New("cluster: member id already in use")
)
