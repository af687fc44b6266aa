package kafka_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/sluicetest"
)

// sentinel is the value readAll writes to find the end of a topic.
const sentinel = "END-OF-TEST"

// tail reads a topic from its start with an isolation level on a
// goroutine of its own until the test ends, keeping every record.
type tail struct {
	mu   sync.Mutex
	recs []*kgo.Record
}

// startTail starts a tail of topic; extra client options (security) may
// be given.
func startTail(t *testing.T, addrs []string, topic string, iso kgo.IsolationLevel, opts ...kgo.Opt) *tail {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso), kgo.FetchMaxWait(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	tl := &tail{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			tl.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { tl.recs = append(tl.recs, r) })
			tl.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	return tl
}

// values returns the values read so far, but the sentinels.
func (tl *tail) values() []string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []string
	for _, r := range tl.recs {
		if string(r.Value) != sentinel {
			out = append(out, string(r.Value))
		}
	}
	return out
}

// sentinels returns the partitions whose sentinel was read.
func (tl *tail) sentinels() map[int32]bool {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	out := map[int32]bool{}
	for _, r := range tl.recs {
		if string(r.Value) == sentinel {
			out[r.Partition] = true
		}
	}
	return out
}

// offsets lists per partition the offsets of topic: end (high watermark)
// or last stable (ListCommittedOffsets: below it every transaction has
// ended; read_committed consumers read no further).
func offsets(t *testing.T, addrs []string, topic string, stable bool, opts ...kgo.Opt) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	list := kadm.NewClient(cl).ListEndOffsets
	if stable {
		list = kadm.NewClient(cl).ListCommittedOffsets
	}
	listed, err := list(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("list offsets of %s/%d: %v", topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// readAll returns the values of topic visible at isolation iso, read to
// the end: it appends a sentinel to every partition (not in a
// transaction) and reads until it has every sentinel. Under read_committed
// that requires every transaction before them to have ended.
func readAll(t *testing.T, addrs []string, topic string, iso kgo.IsolationLevel, opts ...kgo.Opt) []string {
	t.Helper()
	ends := offsets(t, addrs, topic, false, opts...)
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for p := range ends {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(sentinel)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	tl := startTail(t, addrs, topic, iso, opts...)
	sluicetest.WaitEvery(t, 30*time.Second, 20*time.Millisecond, fmt.Sprintf("the sentinels of %d partitions of %s", len(ends), topic), func() bool {
		return len(tl.sentinels()) == len(ends)
	})
	return tl.values()
}

// exactlyOnce fails unless got holds each value of [from, to) once and
// nothing else.
func exactlyOnce(t *testing.T, got []string, from, to int) {
	t.Helper()
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for i := from; i < to; i++ {
		v := strconv.Itoa(i)
		if seen[v] != 1 {
			t.Fatalf("value %s seen %d times, want once (%d values in all)", v, seen[v], len(got))
		}
		delete(seen, v)
	}
	if len(seen) > 0 {
		extra := slices.Sorted(maps.Keys(seen))
		t.Fatalf("%d unexpected values: %v", len(extra), extra[:min(len(extra), 10)])
	}
}
