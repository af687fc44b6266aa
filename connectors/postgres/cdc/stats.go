package cdc

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/pgerr"
	"github.com/sluicehq/sluice/sdk"
)

// Stats counts what a source does and whether the server is reachable.
// Set SourceConfig.Stats to read them (a dashboard, a test). Safe for
// concurrent use.
type Stats struct {
	changes      atomic.Int64
	transactions atomic.Int64
	bytes        atomic.Int64
	errors       atomic.Int64
	produced     atomic.Uint64 // end LSN of the last transaction produced
	confirmed    atomic.Uint64 // the flush LSN last sent to the server
	statuses     atomic.Int64

	mu    sync.Mutex
	since time.Time // when the server became unreachable; zero while it is up
	last  error
}

// Changes returns the row changes produced.
func (s *Stats) Changes() int64 { return s.changes.Load() }

// Transactions returns the transactions produced (each whole).
func (s *Stats) Transactions() int64 { return s.transactions.Load() }

// Bytes returns the bytes of the records produced.
func (s *Stats) Bytes() int64 { return s.bytes.Load() }

// Errors returns the failed connections and reads (each retried).
func (s *Stats) Errors() int64 { return s.errors.Load() }

// Produced returns the end LSN of the last transaction produced (0 before
// the first), as PostgreSQL numbers LSNs.
func (s *Stats) Produced() uint64 { return s.produced.Load() }

// Confirmed returns the LSN the source last confirmed to the server as
// flushed: that of a completed checkpoint (0 before the first).
func (s *Stats) Confirmed() uint64 { return s.confirmed.Load() }

// Statuses returns the standby status updates sent to the server (each
// carries Confirmed).
func (s *Stats) Statuses() int64 { return s.statuses.Load() }

// Down returns, while the source cannot reach the server, an error
// wrapping ErrUnavailable that says since when and why; nil otherwise.
func (s *Stats) Down() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.since.IsZero() {
		return nil
	}
	return fmt.Errorf("%w for %v: %v", ErrUnavailable, time.Since(s.since).Round(100*time.Millisecond), s.last)
}

// up records that the server answered.
func (s *Stats) up() {
	s.mu.Lock()
	s.since = time.Time{}
	s.mu.Unlock()
}

// failure records err, the failure of doing what, and returns what Poll
// reports: an error wrapping ErrRefused when the server refuses the
// source for good, else one wrapping sdk.ErrTransient (and ErrUnavailable,
// naming the outage, while the server cannot be reached).
func (s *Stats) failure(what string, err error) error {
	s.errors.Add(1)
	if r := refusal(err); r != nil {
		s.up()
		return fmt.Errorf("%s: %w", what, r)
	}
	if !unreachable(err) {
		s.up()
		return fmt.Errorf("%s: %w: %w", what, sdk.ErrTransient, err)
	}
	now := time.Now()
	s.mu.Lock()
	if s.since.IsZero() {
		s.since = now
	}
	s.last = err
	since := s.since
	s.mu.Unlock()
	return fmt.Errorf("%s: %w: %w for %v: %w", what, sdk.ErrTransient, ErrUnavailable, now.Sub(since).Round(100*time.Millisecond), err)
}

// errConnLost is a replication connection that ended without an error.
var errConnLost = errors.New("replication connection closed")

// unreachable is pgerr.Unreachable, and a replication stream the server
// ended.
func unreachable(err error) bool { return pgerr.Unreachable(err) || errors.Is(err, errConnLost) }

// sourceHints are the refusals of the source and the settings they name.
var sourceHints = map[string]string{
	"28P01": "check URL (user, password) and the server's pg_hba.conf",
	"28000": "check URL (user, password) and the server's pg_hba.conf",
	"3D000": "check URL (the database name)",
	"42501": "give URL's user the REPLICATION attribute (ALTER ROLE ... REPLICATION) and, to create the publication, ownership of the tables",
	"42P01": "check Tables (each must exist)",
	"42704": "check Slot and Publication, or set CreateSlot and CreatePublication",
	"53400": "raise the server's max_replication_slots (or drop unused slots)",
}

// refusal classifies err: an error wrapping ErrRefused naming the setting
// to check when the server refuses the source for good, nil otherwise.
func refusal(err error) error {
	if errors.Is(err, ErrRefused) {
		return err
	}
	return pgerr.Refusal(err, ErrRefused, sourceHints)
}
