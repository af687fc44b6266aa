package actors

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// idle reads "other" and does nothing: a runtime needs an operator.
type idle struct{}

func (idle) Metadata() core.Metadata {
	return core.Metadata{Name: "idle", Inputs: []core.Input{{Stream: "other"}}, Parallelism: 1}
}
func (idle) Init(core.Context) error                            { return nil }
func (idle) ProcessRecord(core.Context, core.Record) error      { return nil }
func (idle) ProcessTimer(core.Context, string, time.Time) error { return nil }

// TestClosedSubscriptionLeavesNothing: once the released instance of a
// closed subscription's reader is gone, so is its supervisor.
func TestClosedSubscriptionLeavesNothing(t *testing.T) {
	old := releasedLinger
	releasedLinger = 10 * time.Millisecond
	t.Cleanup(func() { releasedLinger = old }) // after the node stopped (cleanups run last first)
	ctx := context.Background()
	n, err := Start(ctx, Config{LocalStore: tpebble.Local, NodeID: "n1", DataDir: t.TempDir(), NoSync: true}, func() core.Operator { return idle{} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	sub, err := n.Subscribe(ctx, "tailed")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Produce(ctx, "tailed", core.Record{Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if rec, err := sub.Next(rctx); err != nil || string(rec.Value) != "x" {
		t.Fatalf("Next = %q, %v", rec.Value, err)
	}
	n.mu.Lock()
	_, had := n.ops[sub.Operator()]
	n.mu.Unlock()
	if !had {
		t.Fatalf("no supervisor of %s while subscribed", sub.Operator())
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 30*time.Second, "no supervisor and no subscription remembered after Close", func() bool {
		n.mu.Lock()
		_, has := n.ops[sub.Operator()]
		n.mu.Unlock()
		return !has && n.tails.Len() == 0
	})
}
