package postgres

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/internal/pgerr"
	"github.com/sluicehq/sluice/sdk"
)

// Metrics counts what the instances of a sink sharing it do, and whether
// the server is reachable. Set SinkConfig.Metrics to read them (a
// dashboard, a test). Safe for concurrent use.
type Metrics struct {
	rows   atomic.Int64
	bytes  atomic.Int64
	errors atomic.Int64

	mu    sync.Mutex
	down  map[*health]outage // instances that cannot reach the server now
	last  error              // the last failed write
	lastT time.Time
}

// outage is one instance's current failure to reach the server.
type outage struct {
	since time.Time
	err   error
}

// Rows returns the rows written and committed.
func (m *Metrics) Rows() int64 { return m.rows.Load() }

// Bytes returns the bytes of the records whose rows were written and
// committed.
func (m *Metrics) Bytes() int64 { return m.bytes.Load() }

// Errors returns the failed writes (each retried).
func (m *Metrics) Errors() int64 { return m.errors.Load() }

// Down returns, while some instance cannot reach the server, an error
// wrapping ErrUnavailable that says since when and why; nil otherwise.
func (m *Metrics) Down() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var first *outage
	for _, o := range m.down {
		if first == nil || o.since.Before(first.since) {
			first = &o
		}
	}
	if first == nil {
		return nil
	}
	return fmt.Errorf("%w for %v: %v", ErrUnavailable, time.Since(first.since).Round(100*time.Millisecond), first.err)
}

// DownSince returns since when some instance cannot reach the server;
// zero while every instance can.
func (m *Metrics) DownSince() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var t time.Time
	for _, o := range m.down {
		if t.IsZero() || o.since.Before(t) {
			t = o.since
		}
	}
	return t
}

// LastError returns the last failed write and when it failed (nil if none).
func (m *Metrics) LastError() (error, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last, m.lastT
}

// health tracks one instance's connection to the server and reports it to
// its Metrics (a private one when the config has none). Used on the
// instance's goroutine; Metrics is read from anywhere.
type health struct {
	m     *Metrics
	what  string    // "postgres sink \"out\""
	since time.Time // when the server became unreachable; zero while it is up
}

func newHealth(m *Metrics, what string) *health {
	if m == nil {
		m = new(Metrics)
	}
	return &health{m: m, what: what}
}

// ok records a successful write of rows rows of n bytes.
func (h *health) ok(rows, n int) {
	h.m.rows.Add(int64(rows))
	h.m.bytes.Add(int64(n))
	h.up()
}

// up records that the server answered.
func (h *health) up() {
	if h.since.IsZero() {
		return
	}
	h.since = time.Time{}
	h.m.mu.Lock()
	delete(h.m.down, h)
	h.m.mu.Unlock()
}

// close forgets the instance's outage (it stops).
func (h *health) close() {
	h.m.mu.Lock()
	delete(h.m.down, h)
	h.m.mu.Unlock()
}

// failure records err, the failure of doing what, and returns what to
// report: an error wrapping ErrRefused when the server refuses the sink (a
// retry will not cure it), else one wrapping sdk.ErrTransient (and
// ErrUnavailable, naming the outage, when the server cannot be reached).
func (h *health) failure(doing string, err error) error {
	h.m.errors.Add(1)
	now := time.Now()
	h.m.mu.Lock()
	h.m.last, h.m.lastT = err, now
	h.m.mu.Unlock()
	if r := refusal(err); r != nil {
		h.up() // it answered
		return fmt.Errorf("%s: %s: %w", h.what, doing, r)
	}
	if !pgerr.Unreachable(err) {
		h.up()
		return fmt.Errorf("%s: %s: %w: %w", h.what, doing, sdk.ErrTransient, err)
	}
	if h.since.IsZero() {
		h.since = now
	}
	h.m.mu.Lock()
	if h.m.down == nil {
		h.m.down = map[*health]outage{}
	}
	h.m.down[h] = outage{since: h.since, err: err}
	h.m.mu.Unlock()
	return fmt.Errorf("%s: %s: %w: %w for %v: %w", h.what, doing, sdk.ErrTransient, ErrUnavailable,
		now.Sub(h.since).Round(100*time.Millisecond), err)
}

// sinkHints are the refusals of the sink and the settings they name.
var sinkHints = map[string]string{
	"28P01": "check URL (user, password) and the server's pg_hba.conf",
	"28000": "check URL (user, password) and the server's pg_hba.conf",
	"3D000": "check URL (the database name)",
	"42P01": "check Table (it must exist)",
	"3F000": "check Table (it must exist)",
	"42703": "check Columns and KeyColumns against the table",
	"42P10": "check KeyColumns: a unique index or constraint on exactly them must exist",
	"42501": "grant the URL's user the privileges (INSERT, UPDATE for upserts; CREATE for the progress table)",
}

// refusal classifies err: an error wrapping ErrRefused naming the setting
// to check when the server refuses the sink for good, nil otherwise.
func refusal(err error) error {
	if r := pgerr.Refusal(err, ErrRefused, sinkHints); r != nil {
		return r
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return nil
	}
	if class := pe.Code[:min(2, len(pe.Code))]; class == "22" || class == "23" || class == "42" {
		// Data (22), integrity (23) and syntax/access (42): the rows or the
		// table do not fit; a retry gives the same answer.
		return fmt.Errorf("%w: %s (SQLSTATE %s); check Columns, Map and the table's definition", ErrRefused, pe.Message, pe.Code)
	}
	return nil
}
