package actors_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/topology"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// unreadNode starts a node hosting a generator of count records to stream
// "s" (deployed) and a sink reading "s" (hosted, not deployed).
func unreadNode(t *testing.T, cfg actors.Config, count int, into *sluicetest.Collector) *actors.Node {
	t.Helper()
	gen := func() core.Operator {
		return &sluicetest.Gen{Name: "gen", Stream: "s", Count: count, Batch: 100, Key: sluicetest.Key(50)}
	}
	sink := func() core.Operator {
		return &sluicetest.Sink{Name: "sink", Inputs: []core.Input{{Stream: "s", Routing: core.GroupBy}}, Parallelism: 2, Into: into}
	}
	kinds, specs, err := actors.Kinds(gen, sink)
	sluicetest.Must(t, err)
	cfg.DataDir = t.TempDir()
	cfg.NoSync = true
	n, err := actors.StartNode(context.Background(), cfg, kinds, specs[:1])
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	return n
}

// deploySink deploys the "sink" kind hosted by n.
func deploySink(t *testing.T, n *actors.Node) {
	t.Helper()
	meta, ok := n.KindMetadata("sink")
	if !ok {
		t.Fatal("the node does not host the sink kind")
	}
	_, err := topology.Update(context.Background(), n.Store(), 5, func(cur topology.Topology) (topology.Topology, error) {
		next, _, err := cur.Deploy(topology.OperatorSpec{Kind: "sink", Meta: meta}, time.Now())
		return next, err
	})
	sluicetest.Must(t, err)
}

// streamStatus returns n's counts for stream.
func streamStatus(n *actors.Node, stream string) actors.StreamStatus {
	for _, s := range n.Streams() {
		if s.Stream == stream {
			return s
		}
	}
	return actors.StreamStatus{Stream: stream}
}

// values returns the generator sequence numbers the collector received,
// failing on duplicates.
func values(t *testing.T, c *sluicetest.Collector) map[int]bool {
	t.Helper()
	seen := make(map[int]bool)
	for _, d := range c.All() {
		v, err := strconv.Atoi(string(d.Record.Value))
		sluicetest.Must(t, err)
		if seen[v] {
			t.Fatalf("record %d delivered twice", v)
		}
		seen[v] = true
	}
	return seen
}

// With durability tracking, records produced to a stream nobody reads are
// held (at most BufferBatches×BatchSize, then the source is not polled)
// and reach the reader, all of them and in order, once it is deployed.
func TestUnreadStreamIsHeldUntilAReaderIsDeployed(t *testing.T) {
	const count, batch, buffers = 20_000, 64, 4
	var got sluicetest.Collector
	n := unreadNode(t, actors.Config{LocalStore: tpebble.Local, AtLeastOnce: true, BatchSize: batch, BufferBatches: buffers, Logger: sluicetest.Logger(t)}, count, &got)

	limit := int64(batch * buffers)
	// The stream's held count moves as records are produced; the node's
	// buffered count is published when the Poll that produced them ends.
	// So wait for both: the generator has stopped, and said so.
	var held int64
	sluicetest.WaitFor(t, 30*time.Second, "the generator to stop for want of a reader", func() bool {
		held = streamStatus(n, "s").Held
		return held >= limit && n.Buffered() == held
	})
	// Blocked: one more Poll's worth at most, and no more afterwards.
	if held > limit+100 {
		t.Fatalf("held %d records, want ≤ %d (the buffer bound plus one Poll)", held, limit+100)
	}
	if d := streamStatus(n, "s").Dropped; d != 0 {
		t.Fatalf("dropped %d records, want 0", d)
	}

	deploySink(t, n)
	sluicetest.WaitFor(t, time.Minute, "every record delivered", func() bool { return got.Len() >= count })
	seen := values(t, &got)
	for i := range count {
		if !seen[i] {
			t.Fatalf("record %d never delivered (%d of %d delivered)", i, len(seen), count)
		}
	}
	// Per key (group-by), in production order.
	last := map[string]int{}
	for _, d := range got.All() {
		v, _ := strconv.Atoi(string(d.Record.Value))
		k := string(d.Record.Key)
		if p, ok := last[k]; ok && p > v {
			t.Fatalf("key %s: record %d delivered after %d", k, v, p)
		}
		last[k] = v
	}
	if s := streamStatus(n, "s"); s.Held != 0 || s.Dropped != 0 {
		t.Fatalf("after delivery: %+v, want nothing held or dropped", s)
	}
}

// Without durability tracking, records of a stream nobody reads are
// dropped, counted per stream and logged at a rate limit.
func TestUnreadStreamIsDroppedAndCountedWithoutDurability(t *testing.T) {
	const count = 5_000
	var logs sluicetest.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	var got sluicetest.Collector
	n := unreadNode(t, actors.Config{LocalStore: tpebble.Local, Logger: logger}, count, &got)

	sluicetest.WaitFor(t, 30*time.Second, "every record counted as dropped", func() bool {
		return streamStatus(n, "s").Dropped == count
	})
	if s := streamStatus(n, "s"); s.Held != 0 {
		t.Fatalf("%+v: want nothing held without durability tracking", s)
	}
	text := logs.String()
	lines := strings.Count(text, "records dropped: no operator reads the stream")
	if lines < 1 || lines > 10 {
		t.Fatalf("dropped records logged on %d lines, want 1 to 10 (rate-limited); logs:\n%s", lines, text)
	}
	if !strings.Contains(text, "stream=s") {
		t.Fatalf("the log does not name the stream:\n%s", text)
	}
}

// A reader deployed onto a stream while it is loaded gets every record
// produced from some point on, with no gap, and the existing reader loses
// nothing.
func TestLiveDeployOfASecondReaderUnderLoad(t *testing.T) {
	const count = 200_000
	var first, second sluicetest.Collector
	gen := func() core.Operator {
		return &sluicetest.Gen{Name: "gen", Stream: "s", Count: count, Key: sluicetest.Key(100)}
	}
	a := func() core.Operator {
		return &sluicetest.Sink{Name: "a", Inputs: []core.Input{{Stream: "s", Routing: core.Shuffle}}, Parallelism: 2, Into: &first}
	}
	b := func() core.Operator {
		return &sluicetest.Sink{Name: "sink", Inputs: []core.Input{{Stream: "s", Routing: core.GroupBy}}, Parallelism: 3, Into: &second}
	}
	kinds, specs, err := actors.Kinds(gen, a, b)
	sluicetest.Must(t, err)
	n, err := actors.StartNode(context.Background(), actors.Config{LocalStore: tpebble.Local, DataDir: t.TempDir(), NoSync: true, AtLeastOnce: true, Logger: sluicetest.Logger(t)}, kinds, specs[:2])
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = n.Stop(context.Background()) })

	sluicetest.WaitFor(t, time.Minute, "the first reader to be under way", func() bool { return first.Len() >= count/10 })
	deploySink(t, n)
	sluicetest.WaitFor(t, 2*time.Minute, "both readers done", func() bool { return first.Len() >= count && second.Len() > 0 && maxValue(&second) == count-1 })

	if seen := values(t, &first); len(seen) != count {
		t.Fatalf("first reader got %d distinct records, want %d", len(seen), count)
	}
	seen := values(t, &second)
	from := count
	for v := range seen {
		from = min(from, v)
	}
	for v := from; v < count; v++ {
		if !seen[v] {
			t.Fatalf("second reader started at record %d but never got %d", from, v)
		}
	}
	if from == 0 {
		t.Fatalf("second reader got every record from 0: the test did not deploy it under load")
	}
	t.Logf("second reader deployed at record %d of %d; got every record from there", from, count)
	if s := streamStatus(n, "s"); s.Dropped != 0 {
		t.Fatalf("%+v: want nothing dropped", s)
	}
}

// maxValue returns the largest sequence number c received.
func maxValue(c *sluicetest.Collector) int {
	m := -1
	for _, d := range c.All() {
		if v, err := strconv.Atoi(string(d.Record.Value)); err == nil {
			m = max(m, v)
		}
	}
	return m
}
