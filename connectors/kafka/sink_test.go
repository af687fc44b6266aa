package kafka_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connectors/kafka"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

func TestSinkFlushWaitsOutABrokerRestart(t *testing.T) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	ctx := context.Background()
	if err := b.CreateTopic(ctx, "out", 2, nil); err != nil {
		t.Fatal(err)
	}
	out := collect(t, b, "out")
	f, err := kafka.NewSink(kafka.SinkConfig{Name: "sink", Brokers: b.Addrs(), Topic: "out",
		Inputs: []sdk.Input{{Stream: "s"}}, FlushTimeout: 300 * time.Millisecond,
		Encode: func(r sdk.Record) (*kgo.Record, error) {
			if string(r.Value) == "bad" {
				return nil, errors.New("cannot encode")
			}
			return kafka.EncodeRaw(r)
		}})
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, f)
	process := func(from, to int) {
		for i := from; i < to; i++ {
			if err := h.Send("s", sdk.Record{Key: []byte("k"), Value: []byte(strconv.Itoa(i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	process(0, 100)
	if err := h.Send("s", sdk.Record{Value: []byte("bad")}); err != nil {
		t.Fatal(err)
	}
	if err := h.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if dl := h.Output("sink.deadletter"); len(dl) != 1 || dl[0].Headers[len(dl[0].Headers)-2].Value != "encode: cannot encode" {
		t.Fatalf("dead letters %+v, want the record that did not encode", dl)
	}

	b.Stop()
	process(100, 200)
	var ferr error
	sluicetest.WaitEvery(t, 20*time.Second, 20*time.Millisecond, "Flush to report the outage", func() bool {
		ferr = h.Flush()
		if ferr == nil {
			t.Fatal("Flush succeeded with the broker down")
		}
		return errors.Is(ferr, sdk.ErrTransient) && errors.Is(ferr, kafka.ErrUnavailable)
	})
	t.Logf("while the broker is down: %v", ferr)
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitEvery(t, 30*time.Second, 20*time.Millisecond, "Flush to succeed after the restart", func() bool { return h.Flush() == nil })
	sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "200 records in the topic", func() bool { return out.len() >= 200 })
	seen := map[string]bool{}
	for _, r := range out.all() {
		seen[string(r.Value)] = true
	}
	for i := range 200 {
		if !seen[strconv.Itoa(i)] {
			t.Fatalf("record %d lost", i)
		}
	}
	t.Logf("%d records written for 200 (%d duplicates)", out.len(), out.len()-200)
}

// TestCommitProducedResumesFromThePositionsInState: at least once, with
// CommitProduced, a clean restart resumes where the first run stopped and
// the group's offsets end at what was produced.
func TestCommitProducedResumesFromThePositionsInState(t *testing.T) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	ctx := context.Background()
	for topic, parts := range map[string]int32{"in": 3, "out": 3} {
		if err := b.CreateTopic(ctx, topic, parts, nil); err != nil {
			t.Fatal(err)
		}
	}
	out := collect(t, b, "out")
	src, err := kafka.NewSource(kafka.SourceConfig{Name: "in", Brokers: b.Addrs(), Topics: []string{"in"}, Stream: "recs",
		Parallelism: 2, Commit: kafka.CommitProduced})
	if err != nil {
		t.Fatal(err)
	}
	sink, err := kafka.NewSink(kafka.SinkConfig{Name: "out", Brokers: b.Addrs(), Topic: "out", Inputs: []sdk.Input{{Stream: "recs"}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(total int) {
		rt, err := node.Start(ctx, node.Config{NodeConfig: node.NodeConfig{NodeID: "n", DataDir: dir, NoSync: true, Logger: quiet}, Guarantee: sdk.AtLeastOnce}, src, sink)
		if err != nil {
			t.Fatal(err)
		}
		sluicetest.WaitEvery(t, 20*time.Second, 20*time.Millisecond, strconv.Itoa(total)+" records out", func() bool { return out.len() >= total })
		if err := rt.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	produce(t, b, numbered("in", 0, 1000)...)
	run(1000)
	produce(t, b, numbered("in", 1000, 1500)...)
	run(1500)
	if n := out.len(); n != 1500 {
		t.Fatalf("%d records out for 1500 in: a clean restart resumed from the wrong position", n)
	}
	ends, _ := b.EndOffsets(ctx, "in")
	got, _ := b.Committed(ctx, "in", "in")
	for p, e := range ends {
		if got[p] != e {
			t.Errorf("partition %d: committed %d, want %d (what was produced)", p, got[p], e)
		}
	}
}
