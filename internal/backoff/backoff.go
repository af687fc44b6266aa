// Package backoff is the one exponential backoff of the runtime: every retry
// loop (Consul heartbeats and watches, topology watches, checkpoint and
// rollback retries, Kafka commits and coordinator requests, the Mesos
// scheduler's subscription and relaunches, the local launcher's restarts)
// and the supervisor's restarts of a failed operator instance wait the
// delays of a Backoff, or of Nth where what is kept is a count of failures
// rather than a Backoff.
//
// Delays start at a minimum and double per failure up to a maximum; each may
// be randomized by a jitter factor (±jitter of the delay) so that many
// nodes retrying the same service spread out, and never exceeds the
// maximum. The arithmetic is github.com/cenkalti/backoff/v5's
// ExponentialBackOff; this package fixes how it is used (multiplier 2, the
// maximum a hard cap, a waiting helper that ends with its context).
//
//	delays := backoff.New(200*time.Millisecond, 5*time.Second, 0.2)
//	for ctx.Err() == nil {
//		if err := try(ctx); err == nil {
//			delays.Reset()
//			continue
//		}
//		if !backoff.Sleep(ctx, delays.Next()) {
//			return
//		}
//	}
package backoff

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Backoff hands out the delays between retries of one failing operation:
// min, 2·min, 4·min, … up to max, each randomized by ±jitter and capped at
// max. It is not safe for concurrent use: each retry loop owns its own.
type Backoff struct {
	b   backoff.ExponentialBackOff
	max time.Duration
}

// New returns a Backoff whose first delay is min, doubling per call of Next
// up to max, each randomized by ±jitter (0 for none, 0.5 for ±50 %).
func New(min, max time.Duration, jitter float64) *Backoff {
	b := &Backoff{b: backoff.ExponentialBackOff{InitialInterval: min, RandomizationFactor: jitter, Multiplier: 2, MaxInterval: max}, max: max}
	b.Reset()
	return b
}

// Next returns the delay before the next retry and advances the backoff.
func (b *Backoff) Next() time.Duration { return min(b.b.NextBackOff(), b.max) }

// Reset starts again from the minimum (after a success).
func (b *Backoff) Reset() { b.b.Reset() }

// Nth returns the n-th delay (n ≥ 1) of an unjittered Backoff from min to
// max: min, 2·min, 4·min, …, max. It is for deterministic state machines
// that keep a count of failures rather than a Backoff; n < 1 counts as 1.
func Nth(n int, min, max time.Duration) time.Duration {
	b := New(min, max, 0)
	d := b.Next()
	for i := 1; i < n && d < max; i++ {
		d = b.Next()
	}
	return d
}

// Sleep waits for d or the end of ctx, whichever comes first, and reports
// whether d elapsed (false: ctx ended, stop retrying).
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
