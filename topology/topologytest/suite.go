package topologytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
)

// Timeout bounds every wait of the suites (a watched version, a closed
// channel).
const Timeout = 10 * time.Second

// RunStoreSuite runs the conformance subtests of topology.Store, each on a
// new, empty store from newStore (which registers its own cleanup).
func RunStoreSuite(t *testing.T, newStore func(t *testing.T) topology.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s topology.Store)
	}{
		{"EmptyLoad", testEmptyLoad},
		{"SwapWatched", testSwapWatched},
		{"StaleSwapConflicts", testStaleSwapConflicts},
		{"ConcurrentUpdates", testConcurrentUpdates},
		{"RoundTrip", testRoundTrip},
		{"WatchSendsCurrent", testWatchSendsCurrent},
		{"SlowWatcherGetsLatest", testSlowWatcherGetsLatest},
		{"WatchClosesWithContext", testWatchClosesWithContext},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

// RunRestorerSuite runs the conformance subtests of topology.Restorer,
// each on a new, empty store from newStore.
func RunRestorerSuite(t *testing.T, newStore func(t *testing.T) topology.RestorableStore) {
	tests := []struct {
		name string
		run  func(t *testing.T, s topology.RestorableStore)
	}{
		{"RestoreEmpty", testRestoreEmpty},
		{"RestoreOlderWatched", testRestoreOlderWatched},
		{"RestoreConflicts", testRestoreConflicts},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

// Deploy returns a change deploying an operator named name (kind name,
// one instance, no streams), for topology.Update.
func Deploy(name string) func(topology.Topology) (topology.Topology, error) {
	return func(tp topology.Topology) (topology.Topology, error) {
		next, _, err := tp.Deploy(topology.OperatorSpec{Kind: name, Meta: core.Metadata{Name: name}}, time.Now())
		return next, err
	}
}

// Versions returns a topology of version v whose operators are op1 … opN
// for N = v, as a store would hold after v deploys.
func Versions(t testing.TB, v int) topology.Topology {
	t.Helper()
	var tp topology.Topology
	for i := 1; i <= v; i++ {
		var err error
		if tp, err = Deploy(fmt.Sprintf("op%d", i))(tp); err != nil {
			t.Fatal(err)
		}
	}
	return tp
}

// Next returns the next value from ch, failing t after Timeout or if ch
// was closed.
func Next(t testing.TB, ch <-chan topology.Topology) topology.Topology {
	t.Helper()
	select {
	case tp, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return tp
	case <-time.After(Timeout):
		t.Fatalf("nothing watched after %v", Timeout)
	}
	return topology.Topology{}
}

// WaitVersion reads ch until it sends version want, failing t after
// Timeout or if a version above want arrives first.
func WaitVersion(t testing.TB, ch <-chan topology.Topology, want int64) topology.Topology {
	t.Helper()
	deadline := time.After(Timeout)
	for {
		select {
		case tp, ok := <-ch:
			if !ok {
				t.Fatalf("watch channel closed while waiting for version %d", want)
			}
			if tp.Version == want {
				return tp
			}
			if tp.Version > want {
				t.Fatalf("watched version %d while waiting for %d", tp.Version, want)
			}
		case <-deadline:
			t.Fatalf("version %d not watched after %v", want, Timeout)
		}
	}
}

func update(t *testing.T, s topology.Store, attempts int, name string) topology.Topology {
	t.Helper()
	tp, err := topology.Update(context.Background(), s, attempts, Deploy(name))
	if err != nil {
		t.Fatalf("deploy %s: %v", name, err)
	}
	return tp
}

func testEmptyLoad(t *testing.T, s topology.Store) {
	tp, err := s.Load(context.Background())
	if err != nil || tp.Version != 0 || len(tp.Operators) != 0 {
		t.Fatalf("empty store: got %+v, %v; want version 0, no operators, no error", tp, err)
	}
}

func testSwapWatched(t *testing.T, s topology.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch := s.Watch(ctx)
	if first := Next(t, watch); first.Version != 0 {
		t.Fatalf("first watched version %d, want 0", first.Version)
	}
	stored := update(t, s, 1, "a")
	if stored.Version != 1 {
		t.Fatalf("stored version %d, want 1", stored.Version)
	}
	got := WaitVersion(t, watch, 1)
	if _, ok := got.Find("a"); !ok || len(got.Operators) != 1 {
		t.Fatalf("watched %+v, want version 1 with a", got)
	}
	if loaded, err := s.Load(ctx); err != nil || loaded.Version != 1 {
		t.Fatalf("load after the swap: version %d, %v; want 1", loaded.Version, err)
	}
}

func testStaleSwapConflicts(t *testing.T, s topology.Store) {
	ctx := context.Background()
	update(t, s, 1, "a")
	stale, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, 1, "b")
	next, err := Deploy("c")(stale)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Swap(ctx, next); !errors.Is(err, topology.ErrConflict) {
		t.Fatalf("swap based on version %d after version %d was stored: %v, want ErrConflict", stale.Version, stale.Version+1, err)
	}
	if got, _ := s.Load(ctx); got.Version != 2 {
		t.Fatalf("after the refused swap: version %d, want 2", got.Version)
	}
	if _, ok := func() (topology.OperatorSpec, bool) { got, _ := s.Load(ctx); return got.Find("c") }(); ok {
		t.Fatal("the refused change landed")
	}
}

func testConcurrentUpdates(t *testing.T, s topology.Store) {
	names := []string{"d", "e", "f", "g", "h", "i", "j", "k"}
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := topology.Update(context.Background(), s, 50, Deploy(n))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	final, err := s.Load(context.Background())
	if err != nil || len(final.Operators) != len(names) || final.Version != int64(len(names)) {
		t.Fatalf("after %d concurrent deploys: %d operators at version %d (%v), want %d and %d",
			len(names), len(final.Operators), final.Version, err, len(names), len(names))
	}
}

func testRoundTrip(t *testing.T, s topology.Store) {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	spec := topology.OperatorSpec{
		Kind: "count",
		Meta: core.Metadata{Name: "count", Inputs: []core.Input{{Stream: "words", Routing: core.GroupBy}},
			Outputs: []string{"counts"}, Parallelism: 3, KeyGroups: 64,
			Restart: core.RestartPolicy{MaxRestarts: 4, Window: time.Minute},
			Window:  &core.WindowSpec{Type: core.WindowHopping, Size: time.Minute, Slide: 10 * time.Second, Lateness: time.Second, Emit: core.EmitOnUpdate}},
		Executable: "/opt/node", CPUs: 0.5, Mem: 128, Disk: 1, Retries: 2,
		Env: map[string]string{"A": "b"},
	}
	want, _, err := topology.Topology{}.Deploy(spec, at)
	if err != nil {
		t.Fatal(err)
	}
	want.Retired = map[string]int64{"old": 3}
	want.Purged = []string{"old"}
	want.Seeded = []string{"gen"}
	if err := s.Swap(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("loaded\n%s\nwant\n%s", g, w)
	}
	if gw, ww := got.Operators[0].Meta.Window, want.Operators[0].Meta.Window; !gw.Equal(ww) {
		t.Fatalf("loaded window %v, want %v", gw, ww)
	}
}

func testWatchSendsCurrent(t *testing.T, s topology.Store) {
	update(t, s, 1, "a")
	update(t, s, 1, "b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if got := Next(t, s.Watch(ctx)); got.Version != 2 {
		t.Fatalf("a new watcher got version %d first, want the current 2", got.Version)
	}
}

func testSlowWatcherGetsLatest(t *testing.T, s topology.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch := s.Watch(ctx) // not read while the store changes
	for i := range 20 {
		update(t, s, 1, fmt.Sprintf("op%d", i))
	}
	WaitVersion(t, watch, 20)
}

func testWatchClosesWithContext(t *testing.T, s topology.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	watch := s.Watch(ctx)
	Next(t, watch)
	cancel()
	deadline := time.After(Timeout)
	for {
		select {
		case _, ok := <-watch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("watch channel still open %v after its context ended", Timeout)
		}
	}
}

func testRestoreEmpty(t *testing.T, s topology.RestorableStore) {
	ctx := context.Background()
	want := Versions(t, 5)
	if err := s.Restore(ctx, 0, want); err != nil {
		t.Fatalf("restore version 5 into an empty store: %v", err)
	}
	if got, err := s.Load(ctx); err != nil || got.Version != 5 || len(got.Operators) != 5 {
		t.Fatalf("after restoring version 5: version %d with %d operators (%v)", got.Version, len(got.Operators), err)
	}
	if got := update(t, s, 1, "next"); got.Version != 6 {
		t.Fatalf("a change after the restore stored version %d, want 6", got.Version)
	}
}

func testRestoreOlderWatched(t *testing.T, s topology.RestorableStore) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 3 {
		update(t, s, 1, fmt.Sprintf("op%d", i+1))
	}
	watch := s.Watch(ctx)
	WaitVersion(t, watch, 3)
	// Restore may go back: it is how a lost store is written again, and how
	// tests make a store lose its history.
	if err := s.Restore(ctx, 3, topology.Topology{}); err != nil {
		t.Fatalf("restore the empty topology over version 3: %v", err)
	}
	if got := Next(t, watch); got.Version != 0 {
		t.Fatalf("watched version %d after restoring the empty topology, want 0", got.Version)
	}
}

func testRestoreConflicts(t *testing.T, s topology.RestorableStore) {
	ctx := context.Background()
	update(t, s, 1, "a")
	if err := s.Restore(ctx, 0, Versions(t, 7)); !errors.Is(err, topology.ErrConflict) {
		t.Fatalf("restore expecting version 0 over version 1: %v, want ErrConflict", err)
	}
	if got, _ := s.Load(ctx); got.Version != 1 {
		t.Fatalf("after the refused restore: version %d, want 1", got.Version)
	}
}
