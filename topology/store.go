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
)

// Store keeps a cluster's topology durably.
type Store interface {
	// Load returns the current topology (the zero Topology when none was
	// ever stored).
	Load(ctx context.Context) (Topology, error)
	// Swap stores next if the stored version is still next.Version-1 and
	// returns ErrConflict otherwise.
	Swap(ctx context.Context, next Topology) error
	// Watch sends the current topology, then every new version, until ctx
	// ends. Delivery is latest-wins; the channel is closed when ctx ends.
	Watch(ctx context.Context) <-chan Topology
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

// latest is a one-slot, latest-wins channel feeder.
func latest(ch chan Topology, t Topology) {
	for {
		select {
		case ch <- t:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}
