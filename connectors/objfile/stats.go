package objfile

import "sync/atomic"

// Stats are a sink's counters, shared by its instances; read them from
// any goroutine.
type Stats struct {
	// Files and Bytes count files put under their final keys and their
	// bytes (a file a repeated commit puts again counts again).
	Files, Bytes atomic.Int64
	// PendingFiles counts files put as pending objects (exactly-once).
	PendingFiles atomic.Int64
	// Errors counts store calls that failed (after the store's retries).
	Errors atomic.Int64
	// Down is true while the last store call failed: an outage of the
	// store, until a call succeeds again.
	Down atomic.Bool
}

// note records the outcome of a store call and returns err.
func (s *Stats) note(err error) error {
	if err != nil {
		s.Errors.Add(1)
	}
	s.Down.Store(err != nil)
	return err
}
