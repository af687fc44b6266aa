package topology_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/topology"
)

// storeSuite checks a Store implementation.
func storeSuite(t *testing.T, s topology.Store) {
	ctx := context.Background()
	if tp, err := s.Load(ctx); err != nil || tp.Version != 0 {
		t.Fatalf("empty store: %+v, %v", tp, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch := s.Watch(wctx)
	first := <-watch
	if first.Version != 0 {
		t.Fatalf("first watched version %d, want 0", first.Version)
	}
	deploy := func(name string) func(topology.Topology) (topology.Topology, error) {
		return func(tp topology.Topology) (topology.Topology, error) {
			next, _, err := tp.Deploy(topology.OperatorSpec{Kind: name, Meta: core.Metadata{Name: name}}, time.Now())
			return next, err
		}
	}
	if _, err := topology.Update(ctx, s, 1, deploy("a")); err != nil {
		t.Fatal(err)
	}
	got := <-watch
	if got.Version != 1 || len(got.Operators) != 1 {
		t.Fatalf("watched %+v, want version 1 with a", got)
	}
	// A change based on a stale version loses.
	stale, _ := s.Load(ctx)
	if _, err := topology.Update(ctx, s, 1, deploy("b")); err != nil {
		t.Fatal(err)
	}
	next, _, _ := stale.Deploy(topology.OperatorSpec{Kind: "c", Meta: core.Metadata{Name: "c"}}, time.Now())
	if err := s.Swap(ctx, next); !errors.Is(err, topology.ErrConflict) {
		t.Fatalf("stale swap: %v, want ErrConflict", err)
	}
	// Concurrent changes: all land, one at a time.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for _, n := range []string{"d", "e", "f", "g", "h", "i", "j", "k"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := topology.Update(ctx, s, 50, deploy(n))
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
	final, _ := s.Load(ctx)
	if len(final.Operators) != 10 || final.Version != 10 {
		t.Fatalf("after concurrent deploys: %d operators at version %d, want 10 and 10", len(final.Operators), final.Version)
	}
	deadline := time.After(10 * time.Second)
	for got.Version != 10 {
		select {
		case got = <-watch:
		case <-deadline:
			t.Fatalf("watch stuck at version %d", got.Version)
		}
	}
}

func TestPebbleStore(t *testing.T) {
	db, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storeSuite(t, topology.NewPebbleStore(db))
}

func TestConsulStore(t *testing.T) {
	agent := consultest.Start(t)
	s, err := topology.NewConsulStore(agent.Addr(), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	storeSuite(t, s)
}
