package actors

import "time"

// Which failures count toward the restart policy.
//
// Every failure the supervisor sees is a strike against the instance; more
// than RestartPolicy.MaxRestarts strikes within Window mark it failed. A
// poison record must not fail the instance, so the strikes of a record (or
// timer) that was dead-lettered are parked when it is, and pardoned (they
// no longer count) when the next record, timer or Poll succeeds: the
// record was bad, the instance is fine. Strikes that are never pardoned:
//
//   - failures in Init, or in the runtime outside an attempt;
//   - failures of Poll (nothing is dead-lettered for them);
//   - failures of a record that later succeeded (a flaky dependency);
//   - failures of records dead-lettered one after another with no success
//     between them: the instance, not the records, is broken, and several
//     of them within Window fail it.
//
// The restart backoff starts again from RestartPolicy.InitialBackoff after
// a success, so that each poison record costs its own few short retries
// rather than a backoff grown by every earlier one.

// strike is one failure within the restart window.
type strike struct {
	at     time.Time
	item   bool // an attempt at a record or timer
	parked bool // its item was dead-lettered: pardoned by the next success
}

// strike records a failure at now for the supervisor and returns the
// strikes within window, and whether the backoff starts over: the instance
// succeeded since its previous failure, or that failure left the window.
// The failure is an item's when the instance said so (failedItem) before
// its actor failed.
func (i *instance) strike(now time.Time, window time.Duration) (count int, fresh bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	keep := i.strikes[:0]
	for _, s := range i.strikes {
		if now.Sub(s.at) < window {
			keep = append(keep, s)
		}
	}
	clear(i.strikes[len(keep):])
	fresh = len(keep) == 0 || i.progressed
	i.strikes = append(keep, strike{at: now, item: i.failedItem})
	i.failedItem, i.progressed = false, false
	return len(i.strikes), fresh
}

// failedAttempt notes, on the instance's goroutine, that the attempt in
// progress failed: at an item (record or timer) unless in Init or Poll.
func (i *instance) failedAttempt() {
	i.failing = true
	item := !i.initing && (i.cur.kind == workRecord || i.cur.kind == workTimer)
	i.mu.Lock()
	i.failedItem = item
	i.mu.Unlock()
}

// park marks the strikes of the item just dead-lettered after attempts
// failed attempts (its most recent item strikes) to be pardoned by the next
// success.
func (i *instance) park(attempts int) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for k := len(i.strikes) - 1; k >= 0 && attempts > 0; k-- {
		if s := &i.strikes[k]; s.item && !s.parked {
			s.parked = true
			attempts--
		}
	}
}

// succeeded notes that a record, timer or Poll succeeded: after failures it
// pardons the parked strikes and lets the next backoff start over. It costs
// nothing while the instance has not failed since its last success.
func (i *instance) succeeded() {
	if !i.failing {
		return
	}
	i.failing = false
	i.mu.Lock()
	defer i.mu.Unlock()
	i.progressed = true
	keep := i.strikes[:0]
	for _, s := range i.strikes {
		if !s.parked {
			keep = append(keep, s)
		}
	}
	clear(i.strikes[len(keep):])
	i.strikes = keep
}
