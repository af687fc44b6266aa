package control

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/topology"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// racingStore lets another client's change land between a Load and the
// next Swap, once.
type racingStore struct {
	topology.Store
	other func(topology.Topology) (topology.Topology, error)
}

func (r *racingStore) Swap(ctx context.Context, next topology.Topology) error {
	if r.other != nil {
		other := r.other
		r.other = nil
		if _, err := topology.Update(ctx, r.Store, 1, other); err != nil {
			return err
		}
	}
	return r.Store.Swap(ctx, next)
}

func deployOp(name string, par int) func(topology.Topology) (topology.Topology, error) {
	return func(t topology.Topology) (topology.Topology, error) {
		next, _, err := t.Deploy(topology.OperatorSpec{Kind: "k", Meta: core.Metadata{Name: name, Parallelism: par}}, time.Now())
		return next, err
	}
}

func TestChangeOperatorConflicts(t *testing.T) {
	db, err := persistence.Open(t.TempDir(), persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := tpebble.New(db)
	ctx := context.Background()

	// Another client deploys the same name first: conflict.
	s := &racingStore{Store: base, other: deployOp("x", 2)}
	_, err = changeOperator(ctx, s, "x", deployOp("x", 3))
	if !errors.Is(err, topology.ErrConflict) || !strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("same-name race: %v, want a conflict naming x", err)
	}
	if cur, _ := base.Load(ctx); func() int { op, _ := cur.Find("x"); return op.Meta.Parallelism }() != 2 {
		t.Fatal("the loser's change landed")
	}

	// Another client changes a different operator: retried on top.
	s = &racingStore{Store: base, other: deployOp("y", 1)}
	got, err := changeOperator(ctx, s, "x", func(t topology.Topology) (topology.Topology, error) { return t.Scale("x", 4, time.Now()) })
	if err != nil {
		t.Fatalf("unrelated race: %v", err)
	}
	if _, ok := got.Find("y"); !ok {
		t.Fatal("the retried change dropped the other client's operator")
	}
	if op, _ := got.Find("x"); op.Meta.Parallelism != 4 {
		t.Fatalf("x has %d instances, want 4", op.Meta.Parallelism)
	}
}
