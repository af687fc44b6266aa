package topology_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/topology"
	"github.com/sluicehq/sluice/topology/consul"
	"github.com/sluicehq/sluice/topology/pebble"
	"github.com/sluicehq/sluice/topology/topologytest"
)

// restartBudget bounds how long a guarded node takes to notice a Consul
// agent that came back empty and to re-seed it: the agent's own start
// (a few seconds) plus the store watch's backoff (at most 5 s).
const restartBudget = 60 * time.Second

func openDB(t *testing.T, dir string) *persistence.DB {
	t.Helper()
	db, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() }) // a second Close is a no-op
	return db
}

func newGuard(t *testing.T, s topology.RestorableStore, copyPath, scope string) *topology.Guard {
	t.Helper()
	g, err := topology.NewGuard(s, topology.NewFileCopy(copyPath, scope), slog.New(slog.NewTextHandler(testWriter{t}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// testWriter sends log lines to t.Log, so that the guard's loud lines show
// with a failing test.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// noRegression fails t at the end if g found a regression.
func noRegression(t *testing.T, g *topology.Guard) {
	t.Cleanup(func() {
		if r, ok := g.Regression(); ok {
			t.Errorf("false regression: %v", r)
		}
	})
}

func TestGuardPassesTheSuiteOnPebble(t *testing.T) {
	topologytest.RunStoreSuite(t, func(t *testing.T) topology.Store {
		g := newGuard(t, pebble.New(openDB(t, t.TempDir())), filepath.Join(t.TempDir(), topology.CopyFile), "test")
		noRegression(t, g)
		return g
	})
}

func TestGuardPassesTheSuiteOnConsul(t *testing.T) {
	agent := consultest.Start(t)
	var n atomic.Int64
	topologytest.RunStoreSuite(t, func(t *testing.T) topology.Store {
		cluster := fmt.Sprintf("guard-%d", n.Add(1))
		s, err := consul.New(agent.Addr(), cluster, nil)
		if err != nil {
			t.Fatal(err)
		}
		g := newGuard(t, s, filepath.Join(t.TempDir(), topology.CopyFile), consul.Key(cluster))
		noRegression(t, g)
		return g
	})
}

// watcher records every version a node-like reader of a Watch receives.
type watcher struct {
	mu       sync.Mutex
	versions []int64
	done     chan struct{}
	stop     func() // cancels the watch and waits for its end; idempotent
}

func watch(t *testing.T, s topology.Store) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{done: make(chan struct{})}
	ch := s.Watch(ctx)
	go func() {
		defer close(w.done)
		for tp := range ch {
			w.mu.Lock()
			w.versions = append(w.versions, tp.Version)
			w.mu.Unlock()
		}
	}()
	w.stop = func() {
		cancel()
		<-w.done
	}
	t.Cleanup(w.stop)
	return w
}

func (w *watcher) seen() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.versions)
}

func (w *watcher) latest() int64 {
	v := w.seen()
	if len(v) == 0 {
		return -1
	}
	return v[len(v)-1]
}

// checkIncreasing fails t unless the watcher saw versions in increasing
// order only.
func (w *watcher) checkIncreasing(t *testing.T) {
	t.Helper()
	v := w.seen()
	for i := 1; i < len(v); i++ {
		if v[i] <= v[i-1] {
			t.Fatalf("the watcher saw version %d after %d (all: %v)", v[i], v[i-1], v)
		}
	}
}

func deployN(t *testing.T, s topology.Store, names ...string) topology.Topology {
	t.Helper()
	var tp topology.Topology
	for _, n := range names {
		var err error
		if tp, err = topology.Update(context.Background(), s, 1, topologytest.Deploy(n)); err != nil {
			t.Fatalf("deploy %s: %v", n, err)
		}
	}
	return tp
}

// checkRefused swaps in a change based on the empty topology, as a node
// that believed a wiped store would, and expects it refused with the
// regression from seen to found, the store keeping version seen.
func checkRefused(t *testing.T, g *topology.Guard, raw topology.Store, seen, found int64) {
	t.Helper()
	ctx := context.Background()
	intruder, err := topologytest.Deploy("intruder")(topology.Topology{})
	if err != nil {
		t.Fatal(err)
	}
	err = g.Swap(ctx, intruder)
	var re *topology.RefusedError
	if !errors.As(err, &re) || !errors.Is(err, topology.ErrRegressed) || !errors.Is(err, topology.ErrConflict) {
		t.Fatalf("a change based on the empty store: %v, want a *RefusedError matching ErrRegressed and ErrConflict", err)
	}
	if re.Based != 0 || re.Regression.Seen != seen || re.Regression.Found != found {
		t.Fatalf("refused: %+v, want based on 0, regression from %d to %d", re, seen, found)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("change based on version 0 refused: topology store went back from version %d to %d", seen, found)) {
		t.Fatalf("the error does not say what happened: %v", err)
	}
	if cur, err := raw.Load(ctx); err != nil || cur.Version != seen {
		t.Fatalf("after the refused change the store holds version %d (%v), want %d", cur.Version, err, seen)
	} else if _, ok := cur.Find("intruder"); ok {
		t.Fatal("the refused change landed")
	}
}

// TestGuardConsulAgentLosesItsData is issue 10's item 5: a Consul dev agent
// restarts with an empty KV while a node watches the topology.
func TestGuardConsulAgentLosesItsData(t *testing.T) {
	agent := consultest.Start(t)
	raw, err := consul.New(agent.Addr(), "prod", nil)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(t.TempDir(), topology.CopyFile)
	g := newGuard(t, raw, copyPath, consul.Key("prod"))
	w := watch(t, g)
	deployN(t, g, "gen", "parse", "count", "sink", "alert")
	sluicetest.WaitEvery(t, 10*time.Second, 10*time.Millisecond, "the watcher to see version 5", func() bool { return w.latest() == 5 })

	agent.Restart() // back with no data: the topology key is gone

	sluicetest.WaitEvery(t, restartBudget, 50*time.Millisecond, "the guard to re-seed the store with version 5", func() bool {
		cur, err := raw.Load(context.Background())
		r, _ := g.Regression()
		return err == nil && cur.Version == 5 && len(cur.Operators) == 5 && r.Reseeded
	})
	r, ok := g.Regression()
	if !ok || r.Seen != 5 || r.Found != 0 || !r.Reseeded || r.Err != nil {
		t.Fatalf("regression %+v (%v), want from 5 to 0, re-seeded", r, ok)
	}
	if want := "topology store went back from version 5 to 0 at "; !strings.HasPrefix(r.String(), want) || !strings.HasSuffix(r.String(), "(its history was lost); re-seeded with version 5 from this node's copy") {
		t.Fatalf("status line %q", r)
	}
	w.checkIncreasing(t)

	checkRefused(t, g, raw, 5, 0)

	// A normal deploy afterwards goes on from version 5.
	if tp := deployN(t, g, "after"); tp.Version != 6 || len(tp.Operators) != 6 {
		t.Fatalf("deploy after the re-seed: version %d with %d operators, want 6 and 6", tp.Version, len(tp.Operators))
	}
	sluicetest.WaitEvery(t, 10*time.Second, 10*time.Millisecond, "the watcher to see version 6", func() bool { return w.latest() == 6 })
	w.checkIncreasing(t)

	w.checkIncreasing(t)

	// The node stops; the store is emptied again; the node starts again:
	// its new guard reads the copy, and its first Load (the node's seed)
	// re-seeds the store.
	w.stop()
	agent.Restart()
	g2 := newGuard(t, raw, copyPath, consul.Key("prod"))
	tp, err := g2.Load(context.Background())
	if err != nil || tp.Version != 6 {
		t.Fatalf("first load of a restarted node: version %d (%v), want 6 from its copy", tp.Version, err)
	}
	if cur, err := raw.Load(context.Background()); err != nil || cur.Version != 6 {
		t.Fatalf("store after the restarted node's load: version %d (%v), want 6", cur.Version, err)
	}
	if r, ok := g2.Regression(); !ok || r.Seen != 6 || r.Found != 0 || !r.Reseeded {
		t.Fatalf("restarted node's regression %+v (%v), want from 6 to 0, re-seeded", r, ok)
	}
}

// TestGuardPebbleStoreGoesBack: the node's Pebble store is set back (to
// nothing, then to an older version) under a watching node.
func TestGuardPebbleStoreGoesBack(t *testing.T) {
	ctx := context.Background()
	raw := pebble.New(openDB(t, t.TempDir()))
	g := newGuard(t, raw, filepath.Join(t.TempDir(), topology.CopyFile), "node")
	w := watch(t, g)
	deployN(t, g, "a", "b", "c")
	sluicetest.WaitFor(t, 10*time.Second, "the watcher to see version 3", func() bool { return w.latest() == 3 })

	if err := raw.Restore(ctx, 3, topology.Topology{}); err != nil { // the store loses everything
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 10*time.Second, "the guard to re-seed version 3", func() bool {
		cur, err := raw.Load(ctx)
		r, _ := g.Regression()
		return err == nil && cur.Version == 3 && r.Reseeded
	})
	if r, ok := g.Regression(); !ok || r.Seen != 3 || r.Found != 0 || !r.Reseeded {
		t.Fatalf("regression %+v (%v), want from 3 to 0, re-seeded", r, ok)
	}
	checkRefused(t, g, raw, 3, 0)
	deployN(t, g, "d")

	// Back to an older version that is not empty: version 2.
	if err := raw.Restore(ctx, 4, topologytest.Versions(t, 2)); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 10*time.Second, "the guard to re-seed version 4", func() bool {
		cur, err := raw.Load(ctx)
		r, _ := g.Regression()
		return err == nil && cur.Version == 4 && r.Seen == 4 && r.Reseeded
	})
	if r, _ := g.Regression(); r.Found != 2 || r.Count != 2 || strings.Contains(r.String(), "history was lost") {
		t.Fatalf("second regression %+v (%s), want from 4 to 2, the second", r, r)
	}
	if tp := deployN(t, g, "e"); tp.Version != 5 {
		t.Fatalf("deploy after the second re-seed: version %d, want 5", tp.Version)
	}
	sluicetest.WaitFor(t, 10*time.Second, "the watcher to see version 5", func() bool { return w.latest() == 5 })
	w.checkIncreasing(t)
}

// TestGuardNodeRestartsOnEmptyPebble: a node comes back on an empty
// database (the store lost) with its copy: its first Load re-seeds.
func TestGuardNodeRestartsOnEmptyPebble(t *testing.T) {
	copyPath := filepath.Join(t.TempDir(), topology.CopyFile)
	db := openDB(t, t.TempDir())
	deployN(t, newGuard(t, pebble.New(db), copyPath, "node"), "a", "b")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	fresh := pebble.New(openDB(t, t.TempDir()))
	g := newGuard(t, fresh, copyPath, "node")
	tp, err := g.Load(context.Background())
	if err != nil || tp.Version != 2 || len(tp.Operators) != 2 {
		t.Fatalf("load: version %d with %d operators (%v), want 2 and 2", tp.Version, len(tp.Operators), err)
	}
	if cur, _ := fresh.Load(context.Background()); cur.Version != 2 {
		t.Fatalf("the empty store was not re-seeded: version %d", cur.Version)
	}
}

// lateStore delivers its watch from a channel the test feeds, as a slow
// backend may deliver a version after a newer one was stored.
type lateStore struct {
	*pebble.Store
	feed chan topology.Topology
}

func (s lateStore) Watch(ctx context.Context) <-chan topology.Topology {
	out := make(chan topology.Topology)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case tp := <-s.feed:
				select {
				case out <- tp:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// TestGuardLateDeliveryIsNoRegression: the store's watch sends a version
// older than one this node stored meanwhile; the store itself never went
// back, so nothing is re-seeded or reported, and the node sees nothing old.
func TestGuardLateDeliveryIsNoRegression(t *testing.T) {
	s := lateStore{Store: pebble.New(openDB(t, t.TempDir())), feed: make(chan topology.Topology)}
	g := newGuard(t, s, filepath.Join(t.TempDir(), topology.CopyFile), "node")
	w := watch(t, g)
	s.feed <- topology.Topology{}
	sluicetest.WaitFor(t, 10*time.Second, "the first version", func() bool { return w.latest() == 0 })
	tp := deployN(t, g, "a", "b", "c")    // through Swap: seen 3
	s.feed <- topologytest.Versions(t, 2) // late
	s.feed <- tp                          // then the current one
	sluicetest.WaitFor(t, 10*time.Second, "version 3", func() bool { return w.latest() == 3 })
	w.checkIncreasing(t)
	if r, ok := g.Regression(); ok {
		t.Fatalf("a late delivery was taken for a regression: %v", r)
	}
	if cur, _ := s.Load(context.Background()); cur.Version != 3 {
		t.Fatalf("store at version %d, want 3", cur.Version)
	}
}

func TestFileCopy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // created by Save
	path := filepath.Join(dir, topology.CopyFile)
	c := topology.NewFileCopy(path, "sluice/prod/topology")
	if _, ok, err := c.Load(); ok || err != nil {
		t.Fatalf("no file: ok=%v err=%v, want no copy and no error", ok, err)
	}
	want := topologytest.Versions(t, 3)
	if err := c.Save(want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.Load()
	if err != nil || !ok || got.Version != 3 || len(got.Operators) != 3 {
		t.Fatalf("load: version %d, ok=%v, err=%v; want version 3", got.Version, ok, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("data dir holds %d files, want only the copy (no temporary file left)", len(entries))
	}

	// Another cluster's data dir: the copy is not used.
	other := topology.NewFileCopy(path, "sluice/test/topology")
	if _, ok, err := other.Load(); ok || !errors.Is(err, topology.ErrForeignCopy) {
		t.Fatalf("copy of another scope: ok=%v err=%v, want ErrForeignCopy", ok, err)
	}
	raw := pebble.New(openDB(t, t.TempDir()))
	g, err := topology.NewGuard(raw, other, nil)
	if err != nil {
		t.Fatalf("a guard with a foreign copy: %v, want it ignored", err)
	}
	if tp, _ := g.Load(context.Background()); tp.Version != 0 {
		t.Fatalf("a guard with a foreign copy loaded version %d, want the store's 0", tp.Version)
	}
	if _, ok := g.Regression(); ok {
		t.Fatal("a foreign copy caused a regression")
	}

	// A damaged copy stops the node with an error naming the file.
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := topology.NewGuard(raw, c, nil); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("a damaged copy: %v, want an error naming %s", err, path)
	}
}

// flakyRestore fails Restore while fail is set, as a store that cannot be
// written (a full disk, an ACL) would.
type flakyRestore struct {
	*pebble.Store
	fail atomic.Bool
}

var errInjected = errors.New("injected: cannot write")

func (s *flakyRestore) Restore(ctx context.Context, expected int64, tp topology.Topology) error {
	if s.fail.Load() {
		return errInjected
	}
	return s.Store.Restore(ctx, expected, tp)
}

// TestGuardRetriesAFailedReseed: while the store cannot be written back,
// the node keeps the latest topology, says so, writes nothing over the
// older one, and its watch retries until the store takes it.
func TestGuardRetriesAFailedReseed(t *testing.T) {
	ctx := context.Background()
	raw := pebble.New(openDB(t, t.TempDir()))
	s := &flakyRestore{Store: raw}
	g := newGuard(t, s, filepath.Join(t.TempDir(), topology.CopyFile), "node")
	w := watch(t, g)
	deployN(t, g, "a", "b", "c")
	sluicetest.WaitFor(t, 10*time.Second, "version 3", func() bool { return w.latest() == 3 })

	s.fail.Store(true)
	if err := raw.Restore(ctx, 3, topology.Topology{}); err != nil { // the store loses everything
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 10*time.Second, "the failed re-seed to be recorded", func() bool {
		r, _ := g.Regression()
		return errors.Is(r.Err, errInjected)
	})
	r, _ := g.Regression()
	if r.Reseeded || !strings.Contains(r.String(), "not re-seeded yet (injected: cannot write): this node keeps running version 3") {
		t.Fatalf("status line %q", r)
	}
	if tp, err := g.Load(ctx); err != nil || tp.Version != 3 {
		t.Fatalf("load while the store is behind: version %d (%v), want the latest seen, 3", tp.Version, err)
	}
	intruder, _ := topologytest.Deploy("intruder")(topology.Topology{})
	if err := g.Swap(ctx, intruder); !errors.Is(err, topology.ErrRegressed) {
		t.Fatalf("a change based on the empty store: %v, want ErrRegressed", err)
	}
	if _, err := topology.Update(ctx, g, 1, topologytest.Deploy("d")); !errors.Is(err, topology.ErrConflict) {
		t.Fatalf("a change while the store is behind: %v, want ErrConflict", err)
	}
	if cur, _ := raw.Load(ctx); cur.Version != 0 {
		t.Fatalf("something was written over the lost store: version %d", cur.Version)
	}
	if v := w.seen(); v[len(v)-1] != 3 {
		t.Fatalf("the watcher saw %v, want nothing after 3", v)
	}

	s.fail.Store(false) // the store can be written again: the watch's retry re-seeds it
	sluicetest.WaitFor(t, 20*time.Second, "the retried re-seed", func() bool {
		cur, err := raw.Load(ctx)
		r, _ := g.Regression()
		return err == nil && cur.Version == 3 && r.Reseeded
	})
	if tp := deployN(t, g, "d"); tp.Version != 4 {
		t.Fatalf("deploy after the re-seed: version %d, want 4", tp.Version)
	}
	sluicetest.WaitFor(t, 10*time.Second, "version 4", func() bool { return w.latest() == 4 })
	w.checkIncreasing(t)
}
