package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connectors/kafka"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// quiet is a logger for runtimes under test.
var quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

// produce writes records to topic and waits for them.
func produce(t *testing.T, b *kafkatest.Broker, recs ...*kgo.Record) {
	t.Helper()
	cl, err := b.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// collector gathers the records of topics through a Tail.
type collector struct {
	mu   sync.Mutex
	recs []*kgo.Record
}

func collect(t *testing.T, b *kafkatest.Broker, topics ...string) *collector {
	t.Helper()
	c := &collector{}
	tail, err := kafkatest.NewTail(b.Addrs(), func(r *kgo.Record) {
		c.mu.Lock()
		c.recs = append(c.recs, r)
		c.mu.Unlock()
	}, topics...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tail.Close)
	return c
}

func (c *collector) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.recs)
}

func (c *collector) all() []*kgo.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recs)
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// pipeline builds source → sink (and a dead-letter sink) over broker b.
func pipeline(t *testing.T, b *kafkatest.Broker, srcPar int) []sdk.Factory {
	t.Helper()
	src, err := kafka.NewSource(kafka.SourceConfig{
		Name: "in", Brokers: b.Addrs(), Topics: []string{"in"}, Stream: "recs", Parallelism: srcPar, KeyGroups: 8,
		Decode: func(r *kgo.Record) (sdk.Record, error) {
			if string(r.Value) == "poison" {
				return sdk.Record{}, errors.New("poisoned")
			}
			return kafka.DecodeRaw(r)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	sink, err := kafka.NewSink(kafka.SinkConfig{Name: "out", Brokers: b.Addrs(), Topic: "out",
		Inputs: []sdk.Input{{Stream: "recs", Routing: sdk.GroupBy}}, Parallelism: 2, KeyGroups: 8})
	if err != nil {
		t.Fatal(err)
	}
	dlq, err := kafka.NewSink(kafka.SinkConfig{Name: "dlq", Brokers: b.Addrs(), Topic: "dlq",
		Inputs: []sdk.Input{{Stream: sdk.DeadLetterStream("in")}}, KeyGroups: 1})
	if err != nil {
		t.Fatal(err)
	}
	return []sdk.Factory{src, sink, dlq}
}

func TestPipelineDeliversEverythingAndCommitsDurableOffsets(t *testing.T) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	ctx := context.Background()
	for topic, parts := range map[string]int32{"in": 4, "out": 3, "dlq": 1} {
		if err := b.CreateTopic(ctx, topic, parts, nil); err != nil {
			t.Fatal(err)
		}
	}
	const n = 20_000
	var recs []*kgo.Record
	poison := map[string]bool{}
	for i := range n {
		r := &kgo.Record{Topic: "in", Key: []byte("k" + strconv.Itoa(i%97)), Value: []byte(strconv.Itoa(i))}
		if i%1000 == 7 {
			r.Value = []byte("poison")
		}
		recs = append(recs, r)
	}
	produce(t, b, recs...)
	for _, r := range recs {
		if string(r.Value) == "poison" {
			poison[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = true
		}
	}
	out, dlq := collect(t, b, "out"), collect(t, b, "dlq")

	sl, err := kafka.NewStateLog(kafka.StateLogConfig{Brokers: b.Addrs(), Prefix: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	rt, err := node.Start(ctx, node.Config{NodeConfig: node.NodeConfig{NodeID: "n", DataDir: t.TempDir(), NoSync: true, Logger: quiet,
		AtLeastOnce: true, StateLog: sl}}, pipeline(t, b, 2)...)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(ctx)

	good := n - len(poison)
	sluicetest.WaitEvery(t, 30*time.Second, 20*time.Millisecond, "every record in the output topic", func() bool { return out.len() >= good })
	sluicetest.WaitEvery(t, 30*time.Second, 20*time.Millisecond, "every poison record in the dead-letter topic", func() bool { return dlq.len() >= len(poison) })
	seen := map[string]int{}
	for _, r := range out.all() {
		seen[string(r.Value)]++
	}
	for _, r := range recs {
		if string(r.Value) != "poison" && seen[string(r.Value)] == 0 {
			t.Fatalf("record %s (partition %d offset %d) missing from the output", r.Value, r.Partition, r.Offset)
		}
	}
	for _, r := range dlq.all() {
		if header(r, kafka.HeaderTopic) != "in" || header(r, sdk.HeaderError) != "decode: poisoned" || string(r.Value) != "poison" {
			t.Fatalf("dead letter %q has headers %v", r.Value, r.Headers)
		}
		k := header(r, kafka.HeaderPartition) + "/" + header(r, kafka.HeaderOffset)
		if !poison[k] {
			t.Fatalf("dead letter names partition/offset %s, not a poison record's", k)
		}
	}
	// Every offset becomes durable and is committed to the group.
	ends, err := b.EndOffsets(ctx, "in")
	if err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitEvery(t, 30*time.Second, 20*time.Millisecond, "offsets committed up to the end", func() bool {
		got, err := b.Committed(ctx, "in", "in")
		return err == nil && maps.Equal(got, ends)
	})
	for _, op := range rt.Status() {
		for _, in := range op.Instances {
			if in.LastError != "" {
				t.Errorf("%s/%d: last error %q", op.Name, in.Index, in.LastError)
			}
		}
	}
}
