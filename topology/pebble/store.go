package pebble

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/topology"
	"github.com/sluicehq/sluice/topology/internal/latest"
)

// MetaKey is the node-metadata key of the topology in the node's database.
const MetaKey = "topology"

// Store keeps the topology in a node's own database (the embedded mode).
// It is safe for concurrent use within the process; it does not see
// writes made to the database by other means.
type Store struct {
	db *persistence.DB

	mu       sync.Mutex // guards writes and watchers
	watchers map[chan topology.Topology]struct{}
}

var (
	_ topology.Store    = (*Store)(nil)
	_ topology.Restorer = (*Store)(nil)
)

// Local is New as the function actors.Config.LocalStore takes: the
// embedded mode's topology store on the node's own database.
func Local(db *persistence.DB) topology.Store { return New(db) }

// New returns the store in db. The caller keeps db open while the store
// is in use and closes it.
func New(db *persistence.DB) *Store {
	return &Store{db: db, watchers: make(map[chan topology.Topology]struct{})}
}

// Load implements topology.Store.
func (s *Store) Load(context.Context) (topology.Topology, error) {
	v, ok, err := s.db.GetMeta(MetaKey)
	if err != nil {
		return topology.Topology{}, fmt.Errorf("topology: read stored topology: %w", err)
	}
	if !ok {
		return topology.Topology{}, nil
	}
	var t topology.Topology
	if err := json.Unmarshal(v, &t); err != nil {
		return topology.Topology{}, fmt.Errorf("topology: decode stored topology: %w", err)
	}
	return t, nil
}

// Swap implements topology.Store.
func (s *Store) Swap(ctx context.Context, next topology.Topology) error {
	return s.write(ctx, next.Version-1, next)
}

// Restore implements topology.Restorer, as Swap does but with any version.
func (s *Store) Restore(ctx context.Context, expected int64, t topology.Topology) error {
	return s.write(ctx, expected, t)
}

// write stores t if the stored version is expected and tells the watchers.
func (s *Store) write(ctx context.Context, expected int64, t topology.Topology) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.Load(ctx)
	if err != nil {
		return err
	}
	if cur.Version != expected {
		return fmt.Errorf("%w: stored version %d, change based on %d", topology.ErrConflict, cur.Version, expected)
	}
	b, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("topology: encode: %w", err)
	}
	if err := s.db.SetMeta(MetaKey, b); err != nil {
		return fmt.Errorf("topology: store version %d: %w", t.Version, err)
	}
	for ch := range s.watchers {
		latest.Publish(ch, t)
	}
	return nil
}

// Watch implements topology.Store. It starts no goroutine: writes publish
// to the watchers, and the channel is closed when ctx ends.
func (s *Store) Watch(ctx context.Context) <-chan topology.Topology {
	ch := make(chan topology.Topology, 1)
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
