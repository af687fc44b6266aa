package topology

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/topology/internal/latest"
)

// Bounds of the guard's repair of a store that went back.
const (
	restoreAttempts   = 5                      // writes back per detection, when others write meanwhile
	retryFirstBackoff = 200 * time.Millisecond // Watch retries a failed repair after this, doubling
	retryMaxBackoff   = 5 * time.Second
)

// Guard is the Store a node uses: it wraps the cluster's store so that the
// node never acts on a topology older than one it has seen.
//
// A store can go back: a Consul agent that lost its data answers with no
// topology at all, a restored backup with an old version. Acting on that
// would stop every operator deployed since, and the next change would be
// based on it and overwrite the lost history for good. The guard keeps the
// latest topology it has seen (from the store or, at start, from its
// LocalCopy) and saves every newer one to the copy. When the store holds
// an older version than that, the guard
//
//   - does not hand it on: Load returns, and Watch sends, the latest one;
//   - logs it at Error level and records it (Regression, for the status);
//   - writes the latest one back (Restorer.Restore, check-and-set on the
//     version found, so that of several guarded nodes the one that saw the
//     most wins), and while it cannot, Watch retries with backoff;
//   - refuses a Swap based on a version older than the one it saw, with a
//     *RefusedError.
//
// With a Sealer (WithSealer), the guard signs every topology it stores and
// treats a stored topology whose seal does not verify (ErrUnsealed: written
// around the control API, straight into the store) as it treats a store
// gone back: it does not hand it on, records it (Regression.Unsealed) and
// writes the latest topology it has seen back over it.
//
// To reset a cluster's topology on purpose, stop its nodes and delete
// CopyFile from their data directories, or use a new cluster name.
//
// A Guard is safe for concurrent use.
type Guard struct {
	store  RestorableStore
	local  LocalCopy
	log    *slog.Logger
	sealer Sealer   // nil: topologies are neither signed nor checked
	sealed sealMemo // the last seal that verified

	mu     sync.Mutex // guards last, reg and hasReg; held while saving the copy, so saves are in order
	last   Topology   // the latest topology seen
	reg    Regression // the latest regression found
	hasReg bool
}

var _ Store = (*Guard)(nil)

// RegressionReporter is implemented by stores that find their backend gone
// back to an older topology (Guard): a node's status shows the regression.
type RegressionReporter interface {
	// Regression returns the latest regression found; ok is false if none.
	Regression() (r Regression, ok bool)
}

var _ RegressionReporter = (*Guard)(nil)

// GuardOption configures a Guard.
type GuardOption func(*Guard)

// WithSealer makes the guard sign what it stores and act only on what a
// node of the cluster signed (see Guard).
func WithSealer(s Sealer) GuardOption { return func(g *Guard) { g.sealer = s } }

// NewGuard returns store guarded with the copy in local, which it reads
// now: a copy of another store (ErrForeignCopy) is ignored with a warning,
// any other failure to read it is an error. A nil log means
// slog.Default().
func NewGuard(store RestorableStore, local LocalCopy, log *slog.Logger, opts ...GuardOption) (*Guard, error) {
	if log == nil {
		log = slog.Default()
	}
	g := &Guard{store: store, local: local, log: log}
	for _, o := range opts {
		o(g)
	}
	t, ok, err := local.Load()
	switch {
	case errors.Is(err, ErrForeignCopy):
		log.Warn("ignoring the local copy of the topology", "error", err)
	case err != nil:
		return nil, fmt.Errorf("topology: guard: %w", err)
	case ok:
		g.last = t
	}
	return g, nil
}

// Regression describes the latest time the guarded store was found behind
// the node: holding an older version than one the node had seen.
type Regression struct {
	// At is when it was found.
	At time.Time
	// Seen is the latest version the node had seen; Found is the version
	// the store held (0: no topology at all).
	Seen, Found int64
	// Reseeded reports whether the store was written back with version
	// Seen; Err says why not (nil while it is being written).
	Reseeded bool
	Err      error
	// Unsealed, when not nil, is why the version found was not acted on
	// although it was not older: its seal did not verify (ErrUnsealed).
	Unsealed error
	// Count is the number of regressions found since the guard was made.
	Count int
}

// String returns the status line of the regression, such as "topology
// store went back from version 12 to 0 at 2026-03-01T12:00:00Z (its
// history was lost); re-seeded with version 12 from this node's copy".
func (r Regression) String() string {
	what := fmt.Sprintf("topology store went back from version %d to %d at %s", r.Seen, r.Found, r.At.UTC().Format(time.RFC3339))
	switch {
	case r.Unsealed != nil:
		what = fmt.Sprintf("topology store held version %d not written by a node of the cluster at %s (%v)", r.Found, r.At.UTC().Format(time.RFC3339), r.Unsealed)
	case r.Found == 0:
		what += " (its history was lost)"
	}
	switch {
	case r.Reseeded:
		return fmt.Sprintf("%s; re-seeded with version %d from this node's copy", what, r.Seen)
	case r.Err == nil:
		return fmt.Sprintf("%s; re-seeding with version %d from this node's copy", what, r.Seen)
	}
	return fmt.Sprintf("%s; not re-seeded yet (%v): this node keeps running version %d and refuses changes based on the older one", what, r.Err, r.Seen)
}

// RefusedError is the error of Guard.Swap for a change based on a version
// older than one the node has seen, after the store went back: the change
// was computed on the lost history, and storing it would have erased the
// rest. It matches ErrRegressed and ErrConflict (errors.Is), so Update and
// the control API compute the change again on the current, re-seeded
// topology.
type RefusedError struct {
	// Based is the version the change was based on.
	Based int64
	// Regression is the regression found.
	Regression Regression
}

// Error says what was refused and why.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("topology: change based on version %d refused: %s; make the change again on the current topology", e.Based, e.Regression)
}

// Unwrap returns ErrRegressed and ErrConflict.
func (e *RefusedError) Unwrap() []error { return []error{ErrRegressed, ErrConflict} }

// Regression implements RegressionReporter.
func (g *Guard) Regression() (Regression, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reg, g.hasReg
}

// Load implements Store: the stored topology, or the latest one seen if
// the store went back (which is then written back). It fails only if the
// store cannot be read.
func (g *Guard) Load(ctx context.Context) (Topology, error) {
	t, _, err := g.current(ctx)
	return t, err
}

// Swap implements Store. It reads the store first (repairing it if it went
// back) and refuses a change based on an older version than the one
// stored: with a *RefusedError if that version is one the store could
// hold while it was behind (from the version found to the one seen before
// a regression), else with ErrConflict.
func (g *Guard) Swap(ctx context.Context, next Topology) error {
	cur, _, err := g.current(ctx)
	if err != nil {
		return err
	}
	if based := next.Version - 1; based < cur.Version {
		if r, ok := g.Regression(); ok && r.Found <= based && based < r.Seen {
			return &RefusedError{Based: based, Regression: r}
		}
		return fmt.Errorf("%w: stored version %d, change based on %d", ErrConflict, cur.Version, based)
	}
	if next, err = sealed(g.sealer, next.Clone()); err != nil {
		return err
	}
	if err := g.store.Swap(ctx, next); err != nil {
		return err
	}
	g.observe(next)
	return nil
}

// Watch implements Store. Its goroutine ends when ctx ends, after the
// store's watch channel closes, and closes the returned channel. It sends
// versions in increasing order only: a version below one seen is never
// sent (the store's delivery is re-read, and the store repaired if it went
// back; while it cannot be, this is retried with backoff).
func (g *Guard) Watch(ctx context.Context) <-chan Topology {
	in := g.store.Watch(ctx)
	out := make(chan Topology, 1)
	go g.watch(ctx, in, out)
	return out
}

func (g *Guard) watch(ctx context.Context, in <-chan Topology, out chan Topology) {
	defer close(out)
	retry := time.NewTimer(retryMaxBackoff)
	retry.Stop() // armed only while the store is behind
	defer retry.Stop()
	delays := backoff.New(retryFirstBackoff, retryMaxBackoff, 0)
	sent := int64(-1)
	for {
		var (
			t       Topology
			pending bool
			err     error
		)
		select {
		case v, ok := <-in:
			if !ok {
				return
			}
			if v.Version >= g.seen() && checkSeal(g.sealer, &g.sealed, v) == nil {
				g.observe(v)
				t = v
				break
			}
			// Behind what was seen: a late delivery, or a store gone back.
			// A fresh read tells them apart (and repairs a store gone
			// back or written around the API).
			t, pending, err = g.current(ctx)
		case <-retry.C:
			t, pending, err = g.current(ctx)
		}
		if err == nil && t.Version > sent {
			latest.Publish(out, t)
			sent = t.Version
		}
		if (pending || err != nil) && ctx.Err() == nil {
			retry.Reset(delays.Next())
		} else {
			delays.Reset()
		}
	}
}

// seen returns the latest version seen.
func (g *Guard) seen() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last.Version
}

// observe records t as seen if it is newer than the latest, and saves it
// to the local copy.
func (g *Guard) observe(t Topology) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.Version <= g.last.Version {
		return
	}
	g.last = t
	if err := g.local.Save(t); err != nil {
		g.log.Warn("cannot keep the local copy of the topology; a lost store could not be re-seeded from it", "version", t.Version, "error", err)
	}
}

// current reads the store and returns what the node may act on: the
// stored topology or, if the store went back, the latest one seen, after
// trying to write it back. pending reports a store still behind.
func (g *Guard) current(ctx context.Context) (t Topology, pending bool, err error) {
	for attempt := 1; ; attempt++ {
		before := g.seen() // every version seen before the read is in it, unless the store went back
		if t, err = g.store.Load(ctx); err != nil {
			return Topology{}, false, err
		}
		unsealed := checkSeal(g.sealer, &g.sealed, t)
		if t.Version >= before && unsealed == nil {
			g.observe(t)
			return t, false, nil
		}
		last := g.found(t.Version, unsealed)
		if unsealed != nil {
			g.log.Error("TOPOLOGY WRITTEN AROUND THE CONTROL API: the store holds a topology no node of the cluster signed; not acting on it, writing the latest seen back",
				"found_version", t.Version, "seen_version", last.Version, "error", unsealed)
		} else {
			g.log.Error("TOPOLOGY STORE WENT BACK: it holds an older topology than this node has seen; not acting on it, writing the latest back from the local copy",
				"found_version", t.Version, "seen_version", last.Version, "operators_found", len(t.Operators), "operators_seen", len(last.Operators))
		}
		if last, err = g.resealed(last); err != nil {
			return Topology{}, false, err
		}
		rerr := g.store.Restore(ctx, t.Version, last)
		g.settle(last.Version, rerr)
		if rerr == nil {
			g.log.Warn("topology store re-seeded from the local copy", "version", last.Version)
			return last, false, nil
		}
		if !errors.Is(rerr, ErrConflict) || attempt == restoreAttempts {
			g.log.Error("cannot re-seed the topology store; keeping the latest topology seen", "version", last.Version, "error", rerr)
			return last, true, nil
		}
		// Written meanwhile (another node re-seeding it?): read again.
	}
}

// resealed returns t, signed again if it has no valid seal (a local copy
// from before the cluster had node certificates).
func (g *Guard) resealed(t Topology) (Topology, error) {
	if checkSeal(g.sealer, &g.sealed, t) == nil {
		return t, nil
	}
	return sealed(g.sealer, t.Clone())
}

// found records a regression to version v (or a version v not acted on
// because its seal did not verify: unsealed) and returns the latest
// topology seen, to write back.
func (g *Guard) found(v int64, unsealed error) Topology {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reg = Regression{At: time.Now(), Seen: g.last.Version, Found: v, Unsealed: unsealed, Count: g.reg.Count + 1}
	g.hasReg = true
	return g.last
}

// settle records the outcome of writing version seen back.
func (g *Guard) settle(seen int64, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reg.Seen == seen {
		g.reg.Reseeded, g.reg.Err = err == nil, err
	}
}
