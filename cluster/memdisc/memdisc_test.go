package memdisc_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/cluster/clustertest"
	"github.com/sluicehq/sluice/cluster/memdisc"
)

type backend struct{ reg *memdisc.Registry }

func (b backend) NewNode(t testing.TB) cluster.Discovery {
	d := memdisc.New(b.reg)
	t.Cleanup(func() { _ = d.Leave(context.Background()) })
	return d
}

func (b backend) Crash(t testing.TB, _ cluster.Discovery, id string) {
	if !b.reg.Fail(id) {
		t.Fatalf("Fail(%q): not a member", id)
	}
}

func TestConformance(t *testing.T) {
	clustertest.RunDiscoverySuite(t, func(*testing.T) clustertest.Backend {
		return backend{reg: memdisc.NewRegistry()}
	})
}

func TestDuplicateID(t *testing.T) {
	reg := memdisc.NewRegistry()
	ctx := context.Background()
	a, b := memdisc.New(reg), memdisc.New(reg)
	defer a.Leave(ctx)
	defer b.Leave(ctx)
	if err := a.Join(ctx, clustertest.Member("x", 1)); err != nil {
		t.Fatalf("Join: %v", err)
	}
	if err := b.Join(ctx, clustertest.Member("x", 2)); !errors.Is(err, cluster.ErrDuplicateID) {
		t.Fatalf("second Join with the same ID: got %v, want %v", err, cluster.ErrDuplicateID)
	}
	// After a crash the ID is free again, and the crashed node's Leave
	// must not remove the new holder.
	reg.Fail("x")
	if err := b.Join(ctx, clustertest.Member("x", 2)); err != nil {
		t.Fatalf("Join after Fail: %v", err)
	}
	if err := a.Leave(ctx); err != nil {
		t.Fatalf("Leave of the crashed node: %v", err)
	}
	if got := reg.Members(); len(got) != 1 || got[0].Address != clustertest.Member("x", 2).Address {
		t.Errorf("members: got %+v, want only the second x", got)
	}
}

func TestFailUnknown(t *testing.T) {
	if memdisc.NewRegistry().Fail("nobody") {
		t.Errorf("Fail(nobody): got true, want false")
	}
}

// A reader that does not keep up gets the newest snapshot, not a backlog,
// and the writers never block.
func TestLatestWins(t *testing.T) {
	reg := memdisc.NewRegistry()
	ctx := context.Background()
	ch := memdisc.New(reg).Watch(ctx)
	var ids []string
	for i := range 50 {
		d := memdisc.New(reg)
		id := clustertest.Member(string(rune('a'+i%26))+string(rune('a'+i/26)), i).ID
		if err := d.Join(ctx, clustertest.Member(id, i)); err != nil {
			t.Fatalf("Join(%s): %v", id, err)
		}
		ids = append(ids, id)
	}
	got := clustertest.IDs(<-ch)
	if want := slices.Sorted(slices.Values(ids)); !slices.Equal(got, want) {
		t.Errorf("first read after 50 joins: got %v, want %v", got, want)
	}
	select {
	case s := <-ch:
		t.Errorf("stale snapshot queued: %v", clustertest.IDs(s))
	default:
	}
}

// The embedded single-node mode: a private registry.
func TestSingleNode(t *testing.T) {
	ctx := context.Background()
	d := memdisc.New(nil)
	if err := d.Join(ctx, clustertest.Member("solo", 1)); err != nil {
		t.Fatalf("Join: %v", err)
	}
	if got := clustertest.IDs(<-d.Watch(ctx)); !slices.Equal(got, []string{"solo"}) {
		t.Errorf("snapshot: got %v, want [solo]", got)
	}
	if err := d.Leave(ctx); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	if got := d.Registry().Members(); len(got) != 0 {
		t.Errorf("members after Leave: got %v, want none", clustertest.IDs(got))
	}
}
