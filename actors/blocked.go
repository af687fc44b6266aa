package actors

import (
	"sync/atomic"
	"time"
)

// spellClock accounts the time an instance spends in some condition, in
// spells: blocked by backpressure (a full output buffer without credit, or
// too much held output), for the status and the console's backpressure
// colour; or busy in its operator's callbacks, for the autoscaler's busy
// fraction. The instance's goroutine sets it; status reads it from any
// goroutine.
type spellClock struct {
	since atomic.Int64 // UnixNano when the current spell began; 0 when none is under way
	total atomic.Int64 // nanoseconds of the finished spells
}

// set records whether the condition holds now: true begins a spell (if
// none is under way), false ends it.
func (c *spellClock) set(on bool) {
	since := c.since.Load()
	switch {
	case on && since == 0:
		c.since.Store(time.Now().UnixNano())
	case !on && since != 0:
		c.total.Add(time.Now().UnixNano() - since)
		c.since.Store(0)
	}
}

// add accounts a spell measured by the caller.
func (c *spellClock) add(d time.Duration) { c.total.Add(int64(d)) }

// read returns the total time in the condition, the current spell
// included.
func (c *spellClock) read() time.Duration {
	total := c.total.Load()
	if since := c.since.Load(); since != 0 {
		total += time.Now().UnixNano() - since
	}
	return time.Duration(total)
}

// setBlocked notes whether the instance is blocked (see instance.blocked).
func (i *instance) setBlocked(b bool) {
	i.blocked = b
	i.pub.blockedTime.set(b)
}

// beginBusy begins the accounting of a unit of input of kind as busy
// time: a batch of records or the timers due are work from this time.Now
// to endBusy's (one pair per unit, not per record); a source's Poll counts
// only if it produced something (an idle poll is waiting, not working), so
// its spell is measured here and accounted by endPoll. handle defers the
// end, so a callback that panics into a restart ends its spell too.
func (i *instance) beginBusy(kind unitKind) (start time.Time, produced int64) {
	if kind != unitPoll {
		i.pub.busyTime.set(true)
		return time.Time{}, 0
	}
	return time.Now(), i.produced
}

// endBusy ends the spell beginBusy began: a poll's counts when the
// instance produced more than before it.
func (i *instance) endBusy(start time.Time, before int64) {
	if start.IsZero() {
		i.pub.busyTime.set(false)
	} else if i.produced > before {
		i.pub.busyTime.add(time.Since(start))
	}
}
