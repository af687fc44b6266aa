package mesos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

// High availability: every scheduler process of a cluster campaigns for
// one Consul lock (api.Lock: a session with a TTL, and the KV key
// sluice/<cluster>/mesos/leader acquired with it). The holder leads: it
// subscribes to the master with the framework ID stored in Consul, and
// every write it makes to the scheduler's keys is a transaction that first
// checks that its session still holds the lock, so a deposed leader cannot
// overwrite its successor's state. The master fences the Mesos side: a
// SUBSCRIBE with the framework ID cuts the previous subscription.
//
// When a leader dies, Consul invalidates its session after about twice
// SessionTTL; a standby blocked on the lock then acquires it (after
// LockDelay), reads the state, and resubscribes. A leader that stops
// cleanly releases the lock at once.

// KV layout under sluice/<cluster>/mesos/.
// The status key is mesosstatus.Key.
func leaderKey(cluster string) string    { return mesosstatus.KeyPrefix(cluster) + "leader" }
func stateKey(cluster string) string     { return mesosstatus.KeyPrefix(cluster) + "state" }
func frameworkKey(cluster string) string { return mesosstatus.KeyPrefix(cluster) + "framework-id" }

// leaderInfo is the value of the leader key.
type leaderInfo struct {
	ID   string `json:"id"`
	HTTP string `json:"http,omitempty"`
}

// leadership is a held leader lock.
type leadership struct {
	client  *api.Client
	cluster string
	lock    *api.Lock
	session string
	// lost is closed when the lock is lost (session invalidated, key
	// changed, or Consul unreachable while monitoring).
	lost <-chan struct{}
}

// campaign blocks until this process holds the leader lock (returning the
// leadership) or ctx ends (returning nil, nil). Errors (Consul
// unreachable) are returned for the caller to retry with backoff.
func campaign(ctx context.Context, client *api.Client, cfg *Config, httpAddr string) (*leadership, error) {
	val, _ := json.Marshal(leaderInfo{ID: cfg.ID, HTTP: httpAddr})
	lock, err := client.LockOpts(&api.LockOptions{
		Key:            leaderKey(cfg.Cluster),
		Value:          val,
		SessionName:    "sluice-mesos " + cfg.Cluster + " " + cfg.ID,
		SessionTTL:     cfg.SessionTTL.String(),
		LockDelay:      cfg.LockDelay,
		LockWaitTime:   cfg.LockWait,
		MonitorRetries: 3,
	})
	if err != nil {
		return nil, fmt.Errorf("mesos: leader lock: %w", err)
	}
	stop := make(chan struct{})
	stopLock := context.AfterFunc(ctx, func() { close(stop) })
	lost, err := lock.Lock(stop)
	if !stopLock() && lost != nil {
		// ctx ended while the lock was being acquired: give it back.
		_ = lock.Unlock()
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mesos: acquiring the leader lock %s: %w", leaderKey(cfg.Cluster), err)
	}
	if lost == nil {
		return nil, nil
	}
	l := &leadership{client: client, cluster: cfg.Cluster, lock: lock, lost: lost}
	pair, _, err := client.KV().Get(leaderKey(cfg.Cluster), (&api.QueryOptions{RequireConsistent: true}).WithContext(ctx))
	if err == nil && (pair == nil || pair.Session == "") {
		err = errors.New("lock key has no session")
	}
	if err != nil {
		_ = lock.Unlock()
		return nil, fmt.Errorf("mesos: reading the leader lock %s: %w", leaderKey(cfg.Cluster), err)
	}
	l.session = pair.Session
	return l, nil
}

// resign releases the lock. The session is destroyed with it; if Consul
// is unreachable the session expires instead.
func (l *leadership) resign() {
	_ = l.lock.Unlock()
}

// write sets KV keys in one transaction that first checks that this
// leader's session holds the lock. It returns an error wrapping
// ErrNotLeader if it does not.
func (l *leadership) write(ctx context.Context, kvs map[string][]byte) error {
	ops := api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVCheckSession, Key: leaderKey(l.cluster), Session: l.session}}}
	for _, k := range slices.Sorted(maps.Keys(kvs)) {
		ops = append(ops, &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVSet, Key: k, Value: kvs[k]}})
	}
	ok, resp, _, err := l.client.Txn().Txn(ops, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("mesos: writing %s to Consul: %w", strings.Join(slices.Sorted(maps.Keys(kvs)), ", "), err)
	}
	if !ok {
		for _, e := range resp.Errors {
			if e.OpIndex == 0 {
				return fmt.Errorf("mesos: writing to Consul: session %s no longer holds %s: %w", l.session, leaderKey(l.cluster), ErrNotLeader)
			}
		}
		var msgs []string
		for _, e := range resp.Errors {
			msgs = append(msgs, e.What)
		}
		return fmt.Errorf("mesos: writing to Consul: transaction failed: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// saveState persists the machine's state (and the framework ID on its
// own key, for operators).
func (l *leadership) saveState(ctx context.Context, p persisted) error {
	return l.write(ctx, map[string][]byte{
		stateKey(l.cluster):     p.marshal(),
		frameworkKey(l.cluster): []byte(p.FrameworkID),
	})
}

// loadState reads the persisted state of the cluster. A missing state is
// an empty one; a framework ID found only on its own key is used.
func loadState(ctx context.Context, client *api.Client, cluster string) (persisted, error) {
	q := (&api.QueryOptions{RequireConsistent: true}).WithContext(ctx)
	var p persisted
	pair, _, err := client.KV().Get(stateKey(cluster), q)
	if err != nil {
		return p, fmt.Errorf("mesos: reading %s: %w", stateKey(cluster), err)
	}
	if pair != nil {
		if err := json.Unmarshal(pair.Value, &p); err != nil {
			return p, fmt.Errorf("mesos: decoding %s: %w", stateKey(cluster), err)
		}
	}
	if p.FrameworkID == "" {
		fw, _, err := client.KV().Get(frameworkKey(cluster), q)
		if err != nil {
			return p, fmt.Errorf("mesos: reading %s: %w", frameworkKey(cluster), err)
		}
		if fw != nil {
			p.FrameworkID = strings.TrimSpace(string(fw.Value))
		}
	}
	return p, nil
}

// holds reports whether this leader's session still holds the lock, by a
// consistent read. Used before each SUBSCRIBE, so that a leader that lost
// the lock without noticing yet cannot fail over its successor.
func (l *leadership) holds(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pair, _, err := l.client.KV().Get(leaderKey(l.cluster), (&api.QueryOptions{RequireConsistent: true}).WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("mesos: reading the leader lock: %w", err)
	}
	return pair != nil && pair.Session == l.session, nil
}
