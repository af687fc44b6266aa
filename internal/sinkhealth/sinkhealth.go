// Package sinkhealth counts what the instances of a sink write and tracks
// their outages: the Metrics of the PostgreSQL and Cassandra sinks are a
// Counters each, and every instance reports through its Instance.
//
//	i := sinkhealth.NewInstance(&metrics.Counters) // in Init
//	i.Wrote(rows, bytes)                           // after a write
//	down := i.Failed(err, unreachable)             // after a failure: how long the outage has lasted
//	i.Close()                                      // when the instance stops
package sinkhealth

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Counters are a sink's rows, bytes and failures, and the outages of its
// instances now. The zero value is ready; safe for concurrent use.
type Counters struct {
	rows   atomic.Int64
	bytes  atomic.Int64
	errors atomic.Int64

	mu    sync.Mutex
	down  map[*Instance]outage // instances that cannot reach the system now
	last  error                // the last failure
	lastT time.Time
}

// outage is one instance's current failure to reach the system.
type outage struct {
	since time.Time
	err   error
}

// Rows returns the rows written.
func (c *Counters) Rows() int64 { return c.rows.Load() }

// Bytes returns the bytes of the rows written.
func (c *Counters) Bytes() int64 { return c.bytes.Load() }

// Errors returns the failed writes (each retried).
func (c *Counters) Errors() int64 { return c.errors.Load() }

// Outage returns, while some instance cannot reach the system, an error
// wrapping unavailable that says for how long and why (the longest
// outage's error); nil otherwise.
func (c *Counters) Outage(unavailable error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first *outage
	for _, o := range c.down {
		if first == nil || o.since.Before(first.since) {
			first = &o
		}
	}
	if first == nil {
		return nil
	}
	return fmt.Errorf("%w for %v: %v", unavailable, time.Since(first.since).Round(100*time.Millisecond), first.err)
}

// DownSince returns since when some instance cannot reach the system;
// zero while every instance can.
func (c *Counters) DownSince() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var t time.Time
	for _, o := range c.down {
		if t.IsZero() || o.since.Before(t) {
			t = o.since
		}
	}
	return t
}

// LastError returns the last failed write and when it failed (nil if
// none).
func (c *Counters) LastError() (error, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last, c.lastT
}

// Instance is one sink instance's reports to its Counters. Used on the
// instance's goroutine.
type Instance struct {
	c     *Counters
	since time.Time // when the system became unreachable; zero while it is up
}

// NewInstance returns the reporter of an instance to c (a private
// Counters when c is nil).
func NewInstance(c *Counters) *Instance {
	if c == nil {
		c = new(Counters)
	}
	return &Instance{c: c}
}

// Wrote records rows rows of n bytes written.
func (i *Instance) Wrote(rows, n int) {
	i.c.rows.Add(int64(rows))
	i.c.bytes.Add(int64(n))
}

// Up records that the system answered: the instance's outage, if any, is
// over.
func (i *Instance) Up() {
	if i.since.IsZero() {
		return
	}
	i.since = time.Time{}
	i.c.mu.Lock()
	delete(i.c.down, i)
	i.c.mu.Unlock()
}

// Close forgets the instance's outage (it stops).
func (i *Instance) Close() {
	i.c.mu.Lock()
	delete(i.c.down, i)
	i.c.mu.Unlock()
}

// Failed records err, a failed write: it counts it and keeps it as the
// last error. If the system could not be reached (unreachable) the
// instance is down from its first such failure on, and Failed returns for
// how long; otherwise the system answered, and the outage is over.
func (i *Instance) Failed(err error, unreachable bool) time.Duration {
	i.c.errors.Add(1)
	now := time.Now()
	i.c.mu.Lock()
	i.c.last, i.c.lastT = err, now
	i.c.mu.Unlock()
	if !unreachable {
		i.Up()
		return 0
	}
	if i.since.IsZero() {
		i.since = now
	}
	i.c.mu.Lock()
	if i.c.down == nil {
		i.c.down = map[*Instance]outage{}
	}
	i.c.down[i] = outage{since: i.since, err: err}
	i.c.mu.Unlock()
	return now.Sub(i.since)
}
