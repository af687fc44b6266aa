package node_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/actors/tail"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/topology"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// startTailRuntime starts an embedded runtime with a counting sink on
// "nums", tuned for small batches so that backpressure shows early.
func startTailRuntime(t *testing.T, seen *atomic.Int64) *node.Runtime {
	t.Helper()
	cfg := node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), Logger: sluicetest.Logger(t), NoSync: true,
		BatchSize: 4, Credits: 2, BufferBatches: 2}}
	rt, err := node.Start(context.Background(), cfg, func() sdk.Operator { return countingSink{seen} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return rt
}

func produceRange(t *testing.T, rt *node.Runtime, stream string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		rec := sdk.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))}
		if err := rt.Produce(context.Background(), stream, rec); err != nil {
			t.Errorf("produce %d: %v", i, err)
			return
		}
	}
}

// nextValues reads n records and returns their values as numbers.
func nextValues(t *testing.T, sub *node.Subscription, n int) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := make([]int, 0, n)
	for range n {
		rec, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("after %d records: %v", len(out), err)
		}
		v, err := strconv.Atoi(string(rec.Value))
		if err != nil {
			t.Fatalf("record %q: %v", rec.Value, err)
		}
		out = append(out, v)
	}
	return out
}

func wantRange(t *testing.T, got []int, from int) {
	t.Helper()
	for i, v := range got {
		if v != from+i {
			t.Fatalf("record %d is %d, want %d (got %v)", i, v, from+i, got)
		}
	}
}

func TestSubscribeSeesRecordsProducedAfterwards(t *testing.T) {
	seen := &atomic.Int64{}
	rt := startTailRuntime(t, seen)
	produceRange(t, rt, "nums", 0, 100)
	sluicetest.WaitFor(t, 30*time.Second, "the sink to see the first 100", func() bool { return seen.Load() == 100 })

	sub, err := rt.Subscribe(context.Background(), "nums")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	done := make(chan struct{})
	go func() { defer close(done); produceRange(t, rt, "nums", 100, 300) }()
	wantRange(t, nextValues(t, sub, 200), 100) // none of the first 100, each later one once, in order
	<-done
	sluicetest.WaitFor(t, 30*time.Second, "the sink to see all 300", func() bool { return seen.Load() == 300 })
}

func TestSubscribeSlowReaderHoldsProducerBack(t *testing.T) {
	rt := startTailRuntime(t, &atomic.Int64{})
	sub, err := rt.Subscribe(context.Background(), "tailed")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	const total = 2000
	var produced atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range total {
			if err := rt.Produce(context.Background(), "tailed", sdk.Record{Value: []byte(strconv.Itoa(i))}); err != nil {
				t.Errorf("produce %d: %v", i, err)
				return
			}
			produced.Add(1)
		}
	}()
	// Nobody reads: the producer must come to a halt well short of total.
	last := int64(-1)
	sluicetest.WaitEvery(t, 30*time.Second, 50*time.Millisecond, "the producer to be held back", func() bool {
		p := produced.Load()
		held := p == last && p > 0 && p < total
		last = p
		return held
	})
	if p := produced.Load(); p > 100 {
		t.Fatalf("%d records produced with none read; credits and buffers allow a few dozen", p)
	}
	// Reading slowly releases it; every record arrives, once, in order.
	wantRange(t, nextValues(t, sub, total), 0)
	<-done
	if p := produced.Load(); p != total {
		t.Fatalf("produced %d, want %d", p, total)
	}
}

func TestSubscribeCloseRemovesTheReader(t *testing.T) {
	rt := startTailRuntime(t, &atomic.Int64{})
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := rt.Subscribe(ctx, "tailed")
	if err != nil {
		t.Fatal(err)
	}
	name := sub.Operator()
	if _, ok := rt.Node().Topology().Find(name); !ok {
		t.Fatalf("reader %s is not deployed", name)
	}
	// A record the reader never takes is pending in the reader's instance.
	produceRange(t, rt, "tailed", 0, 3)
	cancel() // cancelling Subscribe's context closes it
	select {
	case <-sub.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the subscription did not close when its context was cancelled")
	}
	if _, err := sub.Next(context.Background()); !errors.Is(err, node.ErrSubscriptionClosed) {
		t.Fatalf("Next after close: %v, want ErrSubscriptionClosed", err)
	}
	sluicetest.WaitFor(t, 30*time.Second, "the reader's instance to go", func() bool {
		topo := rt.Node().Topology()
		if _, ok := topo.Find(name); ok {
			return false
		}
		for _, op := range rt.Status() {
			for _, in := range op.Instances {
				if op.Name == name && in.State != status.StateReleased {
					return false // released ones linger a minute, bouncing records of stale routes
				}
			}
		}
		return true
	})
	if topo := rt.Node().Topology(); !slices.Contains(topo.Purged, name) {
		t.Fatalf("killed reader %s was not purged (purged: %v)", name, topo.Purged)
	}
	if err := sub.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestSubscribeLeftOpenIsClosedByStop(t *testing.T) {
	dir := t.TempDir()
	start := func() *node.Runtime {
		rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{NodeID: "n1", DataDir: dir, Logger: sluicetest.Logger(t), NoSync: true}},
			func() sdk.Operator { return countingSink{&atomic.Int64{}} })
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	rt := start()
	sub, err := rt.Subscribe(context.Background(), "tailed")
	if err != nil {
		t.Fatal(err)
	}
	produceRange(t, rt, "tailed", 0, 2) // one waits in the reader, unread
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rt.Stop(ctx); err != nil {
		t.Fatalf("Stop with an open subscription: %v", err)
	}
	<-sub.Done()
	// A crash leaves a reader deployed: the restart removes it.
	db, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = topology.Update(context.Background(), tpebble.New(db), 1, func(t topology.Topology) (topology.Topology, error) {
		next, _, err := t.Deploy(topology.OperatorSpec{Kind: "sluice.tail@n1", Meta: sdk.Metadata{
			Name: tail.Prefix + "left", Inputs: []sdk.Input{{Stream: "tailed"}}, Parallelism: 1}.WithDefaults()}, time.Now())
		return next, err
	})
	if cerr := db.Close(); err != nil || cerr != nil {
		t.Fatalf("leave a reader deployed: %v, %v", err, cerr)
	}
	rt = start()
	defer func() { _ = rt.Stop(context.Background()) }()
	if left := tail.Readers(rt.Node().Topology()); len(left) > 0 {
		t.Fatalf("readers %v still deployed after a restart", left)
	}
}
