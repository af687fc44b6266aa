//go:build !race

// Two nodes in one process: see cluster_test.go for why not under -race.

package actors

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/transport"
	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/cluster/memdisc"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// tally counts the records it processes by key.
type tally struct {
	mu   *sync.Mutex
	seen map[string]int
}

func (tally) Metadata() core.Metadata {
	return core.Metadata{Name: "tally", Inputs: []core.Input{{Stream: "words", Routing: core.Shuffle}}, Parallelism: 1}
}
func (tally) Init(core.Context) error { return nil }
func (t tally) ProcessRecord(_ core.Context, rec core.Record) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen[string(rec.Key)]++
	return nil
}
func (tally) ProcessTimer(core.Context, string, time.Time) error { return nil }

func (t tally) count(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen[key]
}

// TestMisaddressedMessagesAreRefused: a batch or a bounce addressed to
// another process at a node's address (a restarted node's predecessor, or
// another cluster's node that had the address) is refused: the batch is
// not processed, the bounce's records are not routed. The same messages
// addressed to the node's own process, or to none (a node that does not
// address them), are taken.
func TestMisaddressedMessagesAreRefused(t *testing.T) {
	ctx := context.Background()
	tl := tally{mu: &sync.Mutex{}, seen: map[string]int{}}
	start := func(id string, ops ...core.Factory) *Node {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		// Each node is a cluster of its own: b stands for a process of
		// another cluster (or an earlier run of a) that a's peers mistake.
		n, err := Start(sctx, Config{LocalStore: tpebble.Local, NodeID: id, DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t),
			Cluster: &ClusterConfig{Discovery: memdisc.New(memdisc.NewRegistry())}}, ops...)
		if err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
		t.Cleanup(func() { _ = n.Stop(context.Background()) })
		return n
	}
	a := start("a", func() core.Operator { return tl })
	b := start("b", func() core.Operator { return idle{} })

	// The ingress's output slot 0 (to tally) exists once it has sent a
	// record there.
	sluicetest.Must(t, a.Produce(ctx, "words", core.Record{Key: []byte("warm")}))
	sluicetest.WaitFor(t, 30*time.Second, "the first record counted", func() bool { return tl.count("warm") == 1 })

	dispatcher := actor.NewPID(a.addr, dispatcherName)
	target := instKey{op: "tally", index: 0}.pidID()
	batch := func(key, inc string, seq uint64, n int) *wire.BatchFrame {
		recs := make([]core.Record, n)
		for i := range recs {
			recs[i] = core.Record{Key: []byte(key)}
		}
		return wire.EncodeFrame(&wire.RecordBatch{Target: transport.Addressed(target, inc), Stream: "words", Routing: int32(core.Shuffle), Slot: 0, Seq: seq,
			From: actor.NewPID(b.addr, transport.Addressed("op/gen/0.0", b.incarnation))}, recs)
	}
	// b's dispatcher drops the bounces of these batches: it has no gen.
	b.system.Root.Send(dispatcher, batch("stray", b.incarnation, 1, 3))
	sluicetest.WaitFor(t, 30*time.Second, "the misaddressed batch refused", func() bool { return a.misaddressed.Count() == 1 })
	b.system.Root.Send(dispatcher, batch("own", a.incarnation, 2, 5))
	b.system.Root.Send(dispatcher, batch("bare", "", 3, 7))
	// In order from one sender to one instance: had the first been
	// delivered, it would have been counted before these.
	sluicetest.WaitFor(t, 30*time.Second, "the batches addressed to a, or to nobody, counted", func() bool {
		return tl.count("own") == 5 && tl.count("bare") == 7
	})
	if n := tl.count("stray"); n != 0 {
		t.Fatalf("counted %d records of a batch addressed to another process", n)
	}

	bounce := func(key, inc string, n int) *wire.Bounce {
		recs := make([]core.Record, n)
		for i := range recs {
			recs[i] = core.Record{Key: []byte(key)}
		}
		return &wire.Bounce{Slot: 0, Seq: 1, Target: transport.Addressed(a.ingress.pid.Id, inc), Records: wire.AppendRecords(nil, recs)}
	}
	b.system.Root.Send(dispatcher, bounce("stray-bounce", b.incarnation, 4))
	sluicetest.WaitFor(t, 30*time.Second, "the misaddressed bounce refused", func() bool { return a.misaddressed.Count() == 2 })
	b.system.Root.Send(dispatcher, bounce("own-bounce", a.incarnation, 6))
	sluicetest.WaitFor(t, 30*time.Second, "the records of the bounce addressed to a routed again", func() bool {
		return tl.count("own-bounce") == 6
	})
	if n := tl.count("stray-bounce"); n != 0 {
		t.Fatalf("routed %d records of a bounce addressed to another process", n)
	}
	if n := b.misaddressed.Count(); n != 0 {
		t.Fatalf("b refused %d messages; its replies from a are addressed to it", n)
	}
}
