package cassandra

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics counts what the instances of a sink sharing it do, and whether
// the cluster is reachable. Set SinkConfig.Metrics to read them (a
// dashboard, a test). Safe for concurrent use.
type Metrics struct {
	rows   atomic.Int64
	bytes  atomic.Int64
	errors atomic.Int64

	mu    sync.Mutex
	down  map[*health]time.Time // instances that cannot reach the cluster now → since when
	last  error                 // the last failed write
	lastT time.Time
}

// Rows returns the rows written and acknowledged at the configured
// consistency (a row written again after a replay counts again).
func (m *Metrics) Rows() int64 { return m.rows.Load() }

// Bytes returns the bytes of the values written and acknowledged.
func (m *Metrics) Bytes() int64 { return m.bytes.Load() }

// Errors returns the failed flushes and writes (each retried).
func (m *Metrics) Errors() int64 { return m.errors.Load() }

// Down returns, while some instance cannot reach the cluster, an error
// wrapping ErrUnavailable that says since when and why; nil otherwise.
func (m *Metrics) Down() error {
	since := m.DownSince()
	if since.IsZero() {
		return nil
	}
	err, _ := m.LastError()
	return fmt.Errorf("%w for %v: %v", ErrUnavailable, time.Since(since).Round(100*time.Millisecond), err)
}

// DownSince returns since when some instance cannot reach the cluster;
// zero while every instance can.
func (m *Metrics) DownSince() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var t time.Time
	for _, since := range m.down {
		if t.IsZero() || since.Before(t) {
			t = since
		}
	}
	return t
}

// LastError returns the last failed write and when it failed (nil if
// none).
func (m *Metrics) LastError() (error, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last, m.lastT
}

// health tracks one instance's reach of the cluster and reports it to its
// Metrics (a private one when the config has none). Used on the
// instance's goroutine; Metrics is read from anywhere.
type health struct {
	m     *Metrics
	what  string    // `cassandra sink "out"`
	since time.Time // when the cluster became unreachable; zero while it is up
}

func newHealth(m *Metrics, what string) *health {
	if m == nil {
		m = new(Metrics)
	}
	return &health{m: m, what: what}
}

// ok records rows rows of n bytes written.
func (h *health) ok(rows, n int) {
	h.m.rows.Add(int64(rows))
	h.m.bytes.Add(int64(n))
}

// up records that the cluster answered a whole flush.
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
// report (see classify): an error wrapping ErrRefused when a retry will
// not cure it, else one wrapping sdk.ErrTransient, and ErrUnavailable,
// naming the outage, when the cluster cannot be reached.
func (h *health) failure(doing string, err error) error {
	h.m.errors.Add(1)
	now := time.Now()
	h.m.mu.Lock()
	h.m.last, h.m.lastT = err, now
	h.m.mu.Unlock()
	c := classify(err)
	if c.kind != unreachable {
		h.up() // it answered
		return c.wrap(h.what+": "+doing, err, 0)
	}
	if h.since.IsZero() {
		h.since = now
	}
	h.m.mu.Lock()
	if h.m.down == nil {
		h.m.down = map[*health]time.Time{}
	}
	h.m.down[h] = h.since
	h.m.mu.Unlock()
	return c.wrap(h.what+": "+doing, err, now.Sub(h.since))
}
