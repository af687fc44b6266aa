package mesos_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
)

// identityWatch follows the cluster's members in Consul, as the nodes do
// (blocking queries on the health of the cluster's service, every check
// passing), and records every moment at which two nodes of one identity
// (slot "<pool>.<instance>", the node ID without its random suffix) were
// active members at once.
type identityWatch struct {
	mu         sync.Mutex
	violations []string
	snapshots  int
	last       []string // active node IDs of the last snapshot, sorted
	lastErr    error
	cancel     context.CancelFunc
	done       chan struct{}
}

// slotOf returns the identity of a node ID "<pool>.<instance>.<random>".
func slotOf(id string) string {
	if i := strings.LastIndexByte(id, '.'); i > 0 {
		return id[:i]
	}
	return id
}

func (e *env) watchIdentities() *identityWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &identityWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var index uint64
		for ctx.Err() == nil {
			q := (&api.QueryOptions{WaitIndex: index, WaitTime: 10 * time.Second}).WithContext(ctx)
			entries, meta, err := e.consul.Client().Health().Service(e.cluster, "", false, q)
			if err != nil {
				w.mu.Lock()
				w.lastErr = err
				w.mu.Unlock()
				index = 0
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond): // retry pacing, not synchronisation
				}
				continue
			}
			index = meta.LastIndex
			bySlot := map[string][]string{}
			var active []string
			for _, en := range entries {
				if en.Checks.AggregatedStatus() == api.HealthPassing {
					id := en.Service.Meta["sluice_id"]
					bySlot[slotOf(id)] = append(bySlot[slotOf(id)], id)
					active = append(active, id)
				}
			}
			slices.Sort(active)
			w.mu.Lock()
			w.snapshots++
			w.last = active
			for slot, ids := range bySlot {
				if len(ids) > 1 {
					slices.Sort(ids)
					w.violations = append(w.violations, fmt.Sprintf("Consul index %d: %s active as %s", index, slot, strings.Join(ids, " and ")))
				}
			}
			w.mu.Unlock()
		}
	}()
	e.t.Cleanup(w.stop)
	return w
}

// stop ends the watch; it may be called twice.
func (w *identityWatch) stop() {
	w.cancel()
	<-w.done
}

// result returns the violations seen and the number of snapshots taken.
func (w *identityWatch) result() ([]string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.violations), w.snapshots
}

// current returns the active node IDs of the last snapshot.
func (w *identityWatch) current() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.last)
}
