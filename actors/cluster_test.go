//go:build !race

// This file runs several nodes in one process. protoactor's remote sets
// grpc's global logger on every start without synchronisation, which the
// race detector reports when a second node starts; so these tests build
// without -race (make test runs them in a separate, non-race step) and the
// multi-process tests in package sluice/cluster cover the same ground
// under -race.

package actors_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/cluster/memdisc"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// activity records instance lifecycle events from every node and checks
// that no instance is ever active on two nodes at once.
type activity struct {
	mu     sync.Mutex
	events []status.Event
}

func (a *activity) record(e status.Event) {
	a.mu.Lock()
	a.events = append(a.events, e)
	a.mu.Unlock()
}

// check fails t if an instance was active on two nodes at the same time.
func (a *activity) check(t *testing.T) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	type span struct {
		node       string
		start, end time.Time
	}
	spans := map[string][]span{}
	open := map[string]int{} // instance@node → index in spans
	for _, e := range a.events {
		k := fmt.Sprintf("%s/%d.%d", e.Operator, e.Epoch, e.Index)
		at := k + "@" + e.Node
		switch e.What {
		case "active":
			spans[k] = append(spans[k], span{node: e.Node, start: e.Time, end: time.Now().Add(time.Hour)})
			open[at] = len(spans[k]) - 1
		default:
			if i, ok := open[at]; ok {
				spans[k][i].end = e.Time
				delete(open, at)
			}
		}
	}
	for k, ss := range spans {
		sort.Slice(ss, func(i, j int) bool { return ss[i].start.Before(ss[j].start) })
		for i := 1; i < len(ss); i++ {
			if ss[i].start.Before(ss[i-1].end) {
				t.Errorf("instance %s active on %s from %v while still active on %s until %v",
					k, ss[i].node, ss[i].start.Format("15:04:05.000"), ss[i-1].node, ss[i-1].end.Format("15:04:05.000"))
			}
		}
	}
}

func (a *activity) moves() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, e := range a.events {
		if e.What == "released" {
			n++
		}
	}
	return n
}

type testCluster struct {
	t     *testing.T
	reg   *memdisc.Registry
	act   *activity
	ops   []core.Factory
	nodes map[string]*actors.Node
	dirs  map[string]string
	// logger, when set, is every node's logger (else the test's).
	logger *slog.Logger
}

func newTestCluster(t *testing.T, ops ...core.Factory) *testCluster {
	return &testCluster{t: t, reg: memdisc.NewRegistry(), act: &activity{}, ops: ops, nodes: map[string]*actors.Node{}, dirs: map[string]string{}}
}

func (c *testCluster) start(id string) *actors.Node {
	c.t.Helper()
	if c.dirs[id] == "" {
		c.dirs[id] = c.t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logger := sluicetest.Logger(c.t)
	if c.logger != nil {
		logger = c.logger
	}
	if f := os.Getenv("SLUICE_DEBUG_LOG"); f != "" {
		w, err := os.OpenFile(f, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			c.t.Fatal(err)
		}
		c.t.Cleanup(func() { w.Close() })
		logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	n, err := actors.Start(ctx, actors.Config{
		LocalStore: tpebble.Local,
		NodeID:     id, DataDir: c.dirs[id], NoSync: true, Logger: logger, OnEvent: c.act.record,
		Cluster: &actors.ClusterConfig{Discovery: memdisc.New(c.reg)},
	}, c.ops...)
	if err != nil {
		c.t.Fatalf("start %s: %v", id, err)
	}
	c.nodes[id] = n
	c.t.Cleanup(func() { _ = n.Stop(context.Background()) })
	return n
}

func (c *testCluster) stop(id string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.nodes[id].Stop(ctx); err != nil {
		c.t.Fatalf("stop %s: %v", id, err)
	}
	delete(c.nodes, id)
}

// processed sums op's processed records over the running nodes.
func (c *testCluster) processed(op string) int64 {
	var sum int64
	for _, n := range c.nodes {
		sum += processed(n, op)
	}
	return sum
}

func TestClusterJoinAndLeaveMoveStateExactCounts(t *testing.T) {
	const records, keys = 300_000, 5_000
	total := &atomic.Int64{}
	c := newTestCluster(t,
		func() core.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "words", Count: records, Key: sluicetest.Key(keys), Batch: 64, Parallelism: 2}
		},
		func() core.Operator { return &counter{name: "count", input: "words", parallelism: 12, total: total} },
	)
	for _, id := range []string{"a", "b", "c"} {
		c.start(id)
	}
	sluicetest.WaitFor(t, time.Minute, "a third counted", func() bool { return total.Load() >= records/3 })
	c.start("d") // joins mid-stream: some instances move to it with their state
	sluicetest.WaitFor(t, time.Minute, "two thirds counted", func() bool { return total.Load() >= 2*records/3 })
	c.stop("b") // leaves gracefully mid-stream
	deadline := time.Now().Add(2 * time.Minute)
	for total.Load() < records {
		if time.Now().After(deadline) {
			c.dump()
			t.Fatalf("timed out: counted %d of %d", total.Load(), records)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("%d instance moves", c.act.moves())
	if c.act.moves() == 0 {
		t.Fatal("no instance moved: the test did not exercise handoff")
	}
	// Stop the rest one by one: each hands its state to the others, so the
	// last one ends up holding all of it.
	for _, id := range []string{"a", "c"} {
		c.stop(id)
	}
	c.stop("d")
	c.act.check(t)
	counts, _ := readCounts(t, c.dirs["d"], "count")
	if total.Load() != records {
		t.Errorf("counted %d records, want %d", total.Load(), records)
	}
	var sum int64
	wrong := 0
	for k, n := range counts {
		sum += n
		if n != records/keys {
			if wrong++; wrong < 5 {
				t.Errorf("key %s counted %d, want %d", k, n, records/keys)
			}
		}
	}
	if len(counts) != keys || wrong > 0 {
		t.Fatalf("%d keys in the last node's state (want %d), %d counted wrong; counts add up to %d", len(counts), keys, wrong, sum)
	}
}

// dump logs every node's instances and pending handoffs.
func (c *testCluster) dump() {
	for id, n := range c.nodes {
		p, _ := n.Pending(context.Background())
		c.t.Logf("node %s: queued %d, pending %v", id, n.Queued(), p)
		for _, st := range n.Status() {
			for _, in := range st.Instances {
				c.t.Logf("  %s/%d.%d [%d,%d) %s processed=%d produced=%d", st.Name, in.Epoch, in.Index, in.FirstGroup, in.EndGroup, in.State, in.Processed, in.Produced)
			}
		}
	}
}
