package actors

import (
	"sync/atomic"
	"time"
)

// blockedClock accounts the time an instance spends blocked by
// backpressure (a full output buffer without credit, or too much held
// output), for the status (and the console's backpressure colour). The
// instance's goroutine sets it; status reads it from any goroutine.
type blockedClock struct {
	since atomic.Int64 // UnixNano when the current blocked spell began; 0 when not blocked
	total atomic.Int64 // nanoseconds of the finished spells
}

// set records whether the instance is blocked now.
func (c *blockedClock) set(blocked bool) {
	since := c.since.Load()
	switch {
	case blocked && since == 0:
		c.since.Store(time.Now().UnixNano())
	case !blocked && since != 0:
		c.total.Add(time.Now().UnixNano() - since)
		c.since.Store(0)
	}
}

// read returns the total time blocked, the current spell included.
func (c *blockedClock) read() time.Duration {
	total := c.total.Load()
	if since := c.since.Load(); since != 0 {
		total += time.Now().UnixNano() - since
	}
	return time.Duration(total)
}

// setBlocked notes whether the instance is blocked (see instance.blocked).
func (i *instance) setBlocked(b bool) {
	i.blocked = b
	i.blockedTime.set(b)
}
