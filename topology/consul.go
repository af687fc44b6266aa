package topology

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/topology/internal/latest"
)

// ConsulStore keeps a cluster's topology in one Consul KV key,
// "sluice/<cluster>/topology", written with check-and-set on the key's
// ModifyIndex (the topology's version is also checked).
//
// Deprecated: use topology/consul.Store, which can also be guarded
// (NewGuard). This copy stays only until the callers outside the topology
// packages move (a forwarding function cannot: topology/consul imports
// this package); it will be deleted then.
type ConsulStore struct {
	kv  *api.KV
	key string
	log *slog.Logger
}

var _ Store = (*ConsulStore)(nil)

// NewConsulStore returns the store of cluster at Consul address addr.
//
// Deprecated: use consul.New from topology/consul.
func NewConsulStore(addr, cluster string, log *slog.Logger) (*ConsulStore, error) {
	cfg := api.DefaultConfig()
	cfg.Address = addr
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("topology: consul client for %s: %w", addr, err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &ConsulStore{kv: c.KV(), key: Key(cluster), log: log}, nil
}

// Key returns the Consul KV key of a cluster's topology.
//
// Deprecated: use consul.Key from topology/consul.
func Key(cluster string) string { return "sluice/" + cluster + "/topology" }

// load reads the topology and the key's ModifyIndex (0 when absent).
func (s *ConsulStore) load(ctx context.Context, opts *api.QueryOptions) (Topology, uint64, *api.QueryMeta, error) {
	if opts == nil {
		opts = &api.QueryOptions{}
	}
	pair, meta, err := s.kv.Get(s.key, opts.WithContext(ctx))
	if err != nil {
		return Topology{}, 0, nil, fmt.Errorf("topology: read %s from Consul: %w", s.key, err)
	}
	if pair == nil {
		return Topology{}, 0, meta, nil
	}
	var t Topology
	if err := json.Unmarshal(pair.Value, &t); err != nil {
		return Topology{}, 0, meta, fmt.Errorf("topology: decode %s: %w", s.key, err)
	}
	return t, pair.ModifyIndex, meta, nil
}

// Load implements Store.
func (s *ConsulStore) Load(ctx context.Context) (Topology, error) {
	t, _, _, err := s.load(ctx, nil)
	return t, err
}

// Swap implements Store.
func (s *ConsulStore) Swap(ctx context.Context, next Topology) error {
	cur, idx, _, err := s.load(ctx, &api.QueryOptions{RequireConsistent: true})
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
	ok, _, err := s.kv.CAS(&api.KVPair{Key: s.key, Value: b, ModifyIndex: idx}, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("topology: write %s to Consul: %w", s.key, err)
	}
	if !ok {
		return fmt.Errorf("%w: %s was written by someone else", ErrConflict, s.key)
	}
	return nil
}

// Watch implements Store: a blocking query loop that keeps the last
// topology while Consul is unreachable and retries with backoff.
func (s *ConsulStore) Watch(ctx context.Context) <-chan Topology {
	ch := make(chan Topology, 1)
	go func() {
		defer close(ch)
		var index uint64
		var last int64 = -1
		backoff := 200 * time.Millisecond
		for ctx.Err() == nil {
			t, _, meta, err := s.load(ctx, &api.QueryOptions{WaitIndex: index, WaitTime: 30 * time.Second})
			if err != nil {
				if errors.Is(ctx.Err(), context.Canceled) {
					return
				}
				s.log.Warn("topology watch failed; keeping the last topology", "error", err, "retry", backoff)
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 5*time.Second)
				index = 0
				continue
			}
			backoff = 200 * time.Millisecond
			if meta.LastIndex < index {
				index = 0 // Consul's index went backwards (restart)
			} else {
				index = meta.LastIndex
			}
			if t.Version != last {
				last = t.Version
				latest.Publish(ch, t)
			}
		}
	}()
	return ch
}
