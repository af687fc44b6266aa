package mesos

import (
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Every exponential backoff of the scheduler is
// github.com/cenkalti/backoff/v5's ExponentialBackOff, doubling from a
// minimum to a maximum:
//
//   - retries of the scheduler's own I/O (campaigning for the lock,
//     subscribing) use a jittered one (jittered), so that schedulers and
//     their masters are not hit in lock step;
//   - the decisions of the machine (relaunch after failures, asking the
//     master again about a task) use the n-th delay of an unjittered one
//     (nthDelay): the machine is deterministic, and what it persists is a
//     count (of failures, of questions), not a backoff object.

// jittered returns a backoff whose delays start at lo and double up to hi,
// each randomized by ±50% and then capped at hi.
func jittered(lo, hi time.Duration) *cappedBackOff {
	return &cappedBackOff{b: backoff.ExponentialBackOff{
		InitialInterval:     lo,
		RandomizationFactor: 0.5,
		Multiplier:          2,
		MaxInterval:         hi,
	}, max: hi}
}

// cappedBackOff is an ExponentialBackOff whose randomized delays never
// exceed max (the library caps the interval before randomizing it).
type cappedBackOff struct {
	b   backoff.ExponentialBackOff
	max time.Duration
}

// Next returns the next delay.
func (c *cappedBackOff) Next() time.Duration { return min(c.b.NextBackOff(), c.max) }

// Reset starts again from the minimum.
func (c *cappedBackOff) Reset() { c.b.Reset() }

// nthDelay returns the n-th delay (n ≥ 1) of an unjittered exponential
// backoff starting at lo and doubling up to hi: lo, 2·lo, 4·lo, …, hi.
func nthDelay(n int, lo, hi time.Duration) time.Duration {
	b := backoff.ExponentialBackOff{InitialInterval: lo, Multiplier: 2, MaxInterval: hi}
	d := lo
	for i := 0; i < n && d < hi; i++ {
		d = b.NextBackOff()
	}
	return min(d, hi)
}
