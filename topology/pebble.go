package topology

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/topology/internal/latest"
)

// pebbleKey is the node-metadata key holding the topology.
const pebbleKey = "topology"

// PebbleStore keeps the topology in a node's own database (embedded mode).
// It is safe for concurrent use within the process.
//
// Deprecated: use topology/pebble.Store, which can also be guarded
// (NewGuard). This copy stays only until the callers outside the topology
// packages move (a forwarding function cannot: topology/pebble imports
// this package); it will be deleted then.
type PebbleStore struct {
	db *persistence.DB

	mu       sync.Mutex // guards the swap and the watchers
	watchers map[chan Topology]struct{}
}

var _ Store = (*PebbleStore)(nil)

// NewPebbleStore returns a store in db.
//
// Deprecated: use pebble.New from topology/pebble.
func NewPebbleStore(db *persistence.DB) *PebbleStore {
	return &PebbleStore{db: db, watchers: make(map[chan Topology]struct{})}
}

// Load implements Store.
func (s *PebbleStore) Load(context.Context) (Topology, error) {
	v, ok, err := s.db.GetMeta(pebbleKey)
	if err != nil || !ok {
		return Topology{}, err
	}
	var t Topology
	if err := json.Unmarshal(v, &t); err != nil {
		return Topology{}, fmt.Errorf("topology: decode stored topology: %w", err)
	}
	return t, nil
}

// Swap implements Store.
func (s *PebbleStore) Swap(ctx context.Context, next Topology) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.Load(ctx)
	if err != nil {
		return err
	}
	if cur.Version != next.Version-1 {
		return fmt.Errorf("%w: stored version %d, change based on %d", ErrConflict, cur.Version, next.Version-1)
	}
	b, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("topology: encode: %w", err)
	}
	if err := s.db.SetMeta(pebbleKey, b); err != nil {
		return err
	}
	for ch := range s.watchers {
		latest.Publish(ch, next)
	}
	return nil
}

// Watch implements Store.
func (s *PebbleStore) Watch(ctx context.Context) <-chan Topology {
	ch := make(chan Topology, 1)
	s.mu.Lock()
	s.watchers[ch] = struct{}{}
	if t, err := s.Load(ctx); err == nil {
		latest.Publish(ch, t)
	}
	s.mu.Unlock()
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		delete(s.watchers, ch)
		close(ch)
		s.mu.Unlock()
	})
	return ch
}
