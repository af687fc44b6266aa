package clustertest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cluster"
)

// Watcher records every snapshot of one Watch channel, checking each
// against the snapshot contract (sorted by ID, unique IDs, members in
// Member.Normalize form). Its goroutine drains the channel until it
// closes; the Watch context is cancelled, and the goroutine waited for, at
// the end of the test.
type Watcher struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{} // closed when the channel has closed

	mu      sync.Mutex
	history []Snapshot
	changed chan struct{} // closed and replaced on every snapshot and on close
}

// Snapshot is one received membership snapshot and when it arrived.
type Snapshot struct {
	At      time.Time
	Members []cluster.Member
}

// Watch calls d.Watch and records its snapshots under name (used in
// failure messages).
func Watch(t testing.TB, name string, d cluster.Discovery) *Watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watcher{name: name, cancel: cancel, done: make(chan struct{}), changed: make(chan struct{})}
	ch := d.Watch(ctx)
	go w.run(t, ch)
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
			t.Errorf("watcher %s: channel not closed 10s after its context ended", name)
		}
	})
	return w
}

func (w *Watcher) run(t testing.TB, ch <-chan []cluster.Member) {
	defer w.notify(nil) // after close(w.done): wakes WaitFor to see Closed
	defer close(w.done)
	for snap := range ch {
		if err := CheckSnapshot(snap); err != nil {
			t.Errorf("watcher %s: %v", w.name, err)
		}
		w.notify(&Snapshot{At: time.Now(), Members: snap})
	}
}

func (w *Watcher) notify(s *Snapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s != nil {
		w.history = append(w.history, *s)
	}
	close(w.changed)
	w.changed = make(chan struct{})
}

// History returns the snapshots received so far, oldest first.
func (w *Watcher) History() []Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.history)
}

// Closed reports whether the Watch channel has closed.
func (w *Watcher) Closed() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// Stop cancels the Watch context.
func (w *Watcher) Stop() { w.cancel() }

// WaitClosed fails t unless the Watch channel closes within timeout.
func (w *Watcher) WaitClosed(t testing.TB, timeout time.Duration) {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(timeout):
		t.Fatalf("watcher %s: channel still open after %v", w.name, timeout)
	}
}

// WaitFor waits until the latest snapshot satisfies cond and returns it,
// failing t after timeout with what was seen and the description of the
// condition.
func (w *Watcher) WaitFor(t testing.TB, timeout time.Duration, desc string, cond func([]cluster.Member) bool) Snapshot {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		changed := w.changed
		var last *Snapshot
		if n := len(w.history); n > 0 {
			last = &w.history[n-1]
		}
		w.mu.Unlock()
		if last != nil && cond(last.Members) {
			return *last
		}
		select {
		case <-changed:
			if w.Closed() {
				t.Fatalf("watcher %s: channel closed while waiting for %s; last snapshot %s", w.name, desc, describe(last))
			}
		case <-deadline.C:
			t.Fatalf("watcher %s: no snapshot with %s within %v; last snapshot %s", w.name, desc, timeout, describe(last))
		}
	}
}

// WaitIDs waits until the latest snapshot holds exactly the members ids.
func (w *Watcher) WaitIDs(t testing.TB, timeout time.Duration, ids ...string) Snapshot {
	t.Helper()
	want := slices.Sorted(slices.Values(ids))
	return w.WaitFor(t, timeout, fmt.Sprintf("members %v", want), func(s []cluster.Member) bool {
		return slices.Equal(IDs(s), want)
	})
}

// IDs returns the member IDs of a snapshot, in order.
func IDs(snap []cluster.Member) []string {
	ids := make([]string, len(snap))
	for i, m := range snap {
		ids[i] = m.ID
	}
	return ids
}

// CheckSnapshot reports how snap breaks the snapshot contract, if it does:
// non-nil, sorted by ID, unique IDs, each member valid and normalized.
func CheckSnapshot(snap []cluster.Member) error {
	if snap == nil {
		return fmt.Errorf("nil snapshot, want an empty slice for no members")
	}
	for i, m := range snap {
		if i > 0 && snap[i-1].ID >= m.ID {
			return fmt.Errorf("snapshot %v not sorted by ID or has duplicates", IDs(snap))
		}
		if !reflect.DeepEqual(m, m.Normalize()) {
			return fmt.Errorf("member %q not normalized: got %+v, want %+v", m.ID, m, m.Normalize())
		}
		if err := m.Validate(); err != nil {
			return fmt.Errorf("snapshot member: %w", err)
		}
	}
	return nil
}

func describe(s *Snapshot) string {
	if s == nil {
		return "(none received)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "at %s: %v", s.At.Format("15:04:05.000"), IDs(s.Members))
	return b.String()
}
