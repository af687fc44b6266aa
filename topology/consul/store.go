package consul

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/topology"
	"github.com/sluicehq/sluice/topology/internal/latest"
)

// Store keeps a cluster's topology in one Consul KV key, Key(cluster),
// written with check-and-set on the key's ModifyIndex (the topology's
// version is checked too). It is safe for concurrent use.
type Store struct {
	kv  *api.KV
	key string
	log *slog.Logger
}

var (
	_ topology.Store    = (*Store)(nil)
	_ topology.Restorer = (*Store)(nil)
)

// New returns the store of cluster at the Consul agent at addr
// ("127.0.0.1:8500", or "https://host:port"). The client reads the ACL
// token and TLS settings from the usual CONSUL_* environment variables of
// Consul's API client (CONSUL_HTTP_TOKEN, CONSUL_HTTP_SSL, CONSUL_CACERT,
// CONSUL_CLIENT_CERT, CONSUL_CLIENT_KEY, ...); the token needs key:write
// on the key (docs/security.md has the policy). It does not contact the
// agent; a nil log means slog.Default().
func New(addr, cluster string, log *slog.Logger) (*Store, error) {
	cfg := api.DefaultConfig()
	cfg.Address = addr
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("topology: consul client for %s: %w", addr, err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Store{kv: c.KV(), key: Key(cluster), log: log}, nil
}

// Key returns the Consul KV key of a cluster's topology,
// "sluice/<cluster>/topology".
func Key(cluster string) string { return "sluice/" + cluster + "/topology" }

// load reads the topology and the key's ModifyIndex (0 when absent).
func (s *Store) load(ctx context.Context, opts *api.QueryOptions) (topology.Topology, uint64, *api.QueryMeta, error) {
	if opts == nil {
		opts = &api.QueryOptions{}
	}
	pair, meta, err := s.kv.Get(s.key, opts.WithContext(ctx))
	if err != nil {
		return topology.Topology{}, 0, nil, fmt.Errorf("topology: read %s from Consul: %w", s.key, s.denied(err, "key:read"))
	}
	if pair == nil {
		return topology.Topology{}, 0, meta, nil
	}
	var t topology.Topology
	if err := json.Unmarshal(pair.Value, &t); err != nil {
		return topology.Topology{}, 0, meta, fmt.Errorf("topology: decode %s: %w", s.key, err)
	}
	return t, pair.ModifyIndex, meta, nil
}

// Load implements topology.Store. It blocks for one request to the agent.
func (s *Store) Load(ctx context.Context) (topology.Topology, error) {
	t, _, _, err := s.load(ctx, nil)
	return t, err
}

// Swap implements topology.Store. It blocks for two requests to the agent
// (a consistent read, then the check-and-set).
func (s *Store) Swap(ctx context.Context, next topology.Topology) error {
	return s.write(ctx, next.Version-1, next)
}

// Restore implements topology.Restorer, as Swap does but with any version.
func (s *Store) Restore(ctx context.Context, expected int64, t topology.Topology) error {
	return s.write(ctx, expected, t)
}

// write stores t if the stored version is expected, with check-and-set on
// the key's ModifyIndex so that a write in between loses.
func (s *Store) write(ctx context.Context, expected int64, t topology.Topology) error {
	cur, idx, _, err := s.load(ctx, &api.QueryOptions{RequireConsistent: true})
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
	ok, _, err := s.kv.CAS(&api.KVPair{Key: s.key, Value: b, ModifyIndex: idx}, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("topology: write %s to Consul: %w", s.key, s.denied(err, "key:write"))
	}
	if !ok {
		return fmt.Errorf("%w: %s was written by someone else", topology.ErrConflict, s.key)
	}
	return nil
}

// Watch implements topology.Store with a loop of blocking queries, run by
// a goroutine that ends (and closes the channel) when ctx ends. While the
// agent is unreachable it keeps the last topology and retries with a
// backoff from 200 ms to 5 s. Any change of version is sent, lower ones
// too (an agent that lost its data comes back empty): guard against those
// with topology.Guard.
func (s *Store) Watch(ctx context.Context) <-chan topology.Topology {
	ch := make(chan topology.Topology, 1)
	go func() {
		defer close(ch)
		var index uint64
		var last int64 = -1
		delays := backoff.New(200*time.Millisecond, 5*time.Second, 0)
		for ctx.Err() == nil {
			t, _, meta, err := s.load(ctx, &api.QueryOptions{WaitIndex: index, WaitTime: 30 * time.Second})
			if err != nil {
				if errors.Is(ctx.Err(), context.Canceled) {
					return
				}
				d := delays.Next()
				s.log.Warn("topology watch failed; keeping the last topology", "error", err, "retry", d)
				if !backoff.Sleep(ctx, d) {
					return
				}
				index = 0
				continue
			}
			delays.Reset()
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

// ErrPermissionDenied is returned (wrapped) when Consul refuses to read or
// write the topology with 403 "Permission denied": the ACL token lacks a
// permission on the key. The error names it.
var ErrPermissionDenied = errors.New("topology: permission denied by Consul ACLs")

// denied wraps a 403 from Consul with ErrPermissionDenied and the
// permission (e.g. "key:write") the request needs on the store's key;
// Consul's own message (naming the token's AccessorID and the missing
// permission) stays in the chain. Other errors are returned unchanged.
func (s *Store) denied(err error, permission string) error {
	var se api.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusForbidden {
		return err
	}
	return fmt.Errorf("%w: the ACL token (CONSUL_HTTP_TOKEN, else the agent's default token) needs %s on %s (key_prefix \"sluice/<cluster>/\"): %w",
		ErrPermissionDenied, permission, s.key, err)
}
