package topology

import (
	"context"
	"errors"
)

// Errors of this package.
var (
	// ErrConflict is returned by Store.Swap when the stored topology is no
	// longer the version the change was based on.
	ErrConflict = errors.New("topology: changed concurrently")
	// ErrUnknownOperator is returned for a change to an operator that is
	// not deployed.
	ErrUnknownOperator = errors.New("topology: no such operator")
	// ErrRegressed marks a change refused by Guard because it was based on
	// a store that had gone back to an older version than one this node
	// had seen (its history was lost, as when Consul's data is wiped). A
	// *RefusedError carries it, together with ErrConflict.
	ErrRegressed = errors.New("topology: store went back to an older version")
	// ErrForeignCopy is returned by FileCopy.Load for a copy kept for
	// another store (another cluster); Guard ignores such a copy.
	ErrForeignCopy = errors.New("topology: local copy belongs to another store")
)

// Store keeps a cluster's topology durably. Implementations are safe for
// concurrent use; backends live in subpackages (topology/consul,
// topology/pebble) and pass the conformance suite of topology/topologytest.
type Store interface {
	// Load returns the current topology (the zero Topology when none was
	// ever stored).
	Load(ctx context.Context) (Topology, error)
	// Swap stores next if the stored version is still next.Version-1 and
	// returns ErrConflict otherwise.
	Swap(ctx context.Context, next Topology) error
	// Watch sends the current topology, then every new version, until ctx
	// ends. Delivery is latest-wins; the channel is closed when ctx ends.
	// It never blocks; any goroutine it starts ends with ctx.
	Watch(ctx context.Context) <-chan Topology
}

// Restorer is implemented by stores that can write a topology back over
// whatever version they hold: the way Guard re-seeds a store that lost its
// history. Both backends implement it.
type Restorer interface {
	// Restore stores t if the stored version is still expected (0 for an
	// empty store) and returns ErrConflict otherwise. Unlike Swap, t's
	// version need not be expected+1. Watchers are sent t.
	Restore(ctx context.Context, expected int64, t Topology) error
}

// RestorableStore is a Store that is also a Restorer, as Guard needs.
type RestorableStore interface {
	Store
	Restorer
}

// Update applies change to the current topology and stores the result
// with check-and-set, retrying up to attempts times on ErrConflict (use 1
// to fail on the first conflict). It returns the stored topology.
func Update(ctx context.Context, s Store, attempts int, change func(Topology) (Topology, error)) (Topology, error) {
	var err error
	for i := 0; i < max(attempts, 1); i++ {
		var cur, next Topology
		if cur, err = s.Load(ctx); err != nil {
			return Topology{}, err
		}
		if next, err = change(cur); err != nil {
			return Topology{}, err
		}
		if next.Version == cur.Version {
			return cur, nil // no change
		}
		if err = s.Swap(ctx, next); err == nil {
			return next, nil
		}
		if !errors.Is(err, ErrConflict) {
			return Topology{}, err
		}
	}
	return Topology{}, err
}
