package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connectors/kafka"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// produceSpread writes values "p<partition>-<i>" for i in [from, to) to
// topic, record i to partition i mod parts.
func produceSpread(t *testing.T, b *kafkatest.Broker, topic string, parts, from, to int) {
	t.Helper()
	cl, err := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		p := i % parts
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: fmt.Appendf(nil, "p%d-%d", p, i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// byPartition splits values "p<partition>-<i>" by partition, in order.
func byPartition(recs []sdk.Record) map[string][]string {
	out := map[string][]string{}
	for _, r := range recs {
		p, _, _ := strings.Cut(string(r.Value), "-")
		out[p] = append(out[p], string(r.Value))
	}
	return out
}

// commitGroup sets group's committed offsets of topic.
func commitGroup(t *testing.T, b *kafkatest.Broker, group, topic string, at map[int32]int64) {
	t.Helper()
	cl, err := b.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var os kadm.Offsets
	for p, o := range at {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
	}
	resp, err := kadm.NewClient(cl).CommitOffsets(context.Background(), group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

func waitCommitted(t *testing.T, b *kafkatest.Broker, group, topic string, want map[int32]int64) {
	t.Helper()
	var got map[int32]int64
	sluicetest.WaitEvery(t, 20*time.Second, 20*time.Millisecond, fmt.Sprintf("group %s to commit %v", group, want), func() bool {
		var err error
		got, err = b.Committed(context.Background(), group, topic)
		return err == nil && maps.Equal(got, want)
	})
}

func TestExactlyOnceSourceProducesAgainExactlyWhatFollowedTheRestoredCheckpoint(t *testing.T) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	ctx := context.Background()
	if err := b.CreateTopic(ctx, "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	produceSpread(t, b, "t", 2, 0, 60)
	f, err := kafka.NewSource(kafka.SourceConfig{Name: "src", Brokers: b.Addrs(), Topics: []string{"t"}, Stream: "s", Group: "g", MaxPollRecords: 7})
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, f, sdktest.WithGuarantee(sdk.ExactlyOnce))

	pollUntil(t, h, "s", 60)
	must(t, "Checkpoint(1)", h.Checkpoint(1))
	produceSpread(t, b, "t", 2, 60, 100)
	pollUntil(t, h, "s", 100)
	must(t, "Flush", h.Flush())
	if got, err := b.Committed(ctx, "g", "t"); err != nil && !errors.Is(err, kerr.GroupIDNotFound) || len(got) != 0 {
		t.Fatalf("group offsets %v (%v) before any checkpoint completed, want none: offsets are committed after completion only", got, err)
	}
	must(t, "Checkpoint(2)", h.Checkpoint(2))
	must(t, "Complete(1)", h.Complete(1))
	waitCommitted(t, b, "g", "t", map[int32]int64{0: 30, 1: 30}) // the positions at barrier 1, not the latest
	after := byPartition(h.Take("s")[60:])

	// The group's offsets are for monitoring only: move them away, and
	// restore the instance from checkpoint 1 (the first instance crashed):
	// Init, then Commit(1).
	commitGroup(t, b, "g", "t", map[int32]int64{0: 3, 1: 49})
	must(t, "restore checkpoint 1", h.Crash(1))
	pollUntil(t, h, "s", 40)
	if got := byPartition(h.Output("s")); !maps.EqualFunc(got, after, slices.Equal) {
		t.Fatalf("after the restore produced %v, want what followed checkpoint 1: %v", got, after)
	}
	waitCommitted(t, b, "g", "t", map[int32]int64{0: 30, 1: 30})
	if keys := stateKeys(h, "kafka/pos/"); !slices.Equal(keys, []string{"kafka/pos/t/0", "kafka/pos/t/1"}) {
		t.Fatalf("state holds positions %v", keys)
	}
}

func TestExactlyOnceSourceWithoutStateStartsFromTheGroupsOffsets(t *testing.T) {
	b := brokerWithRecords(t, 100)
	commitGroup(t, b, "g", "t", map[int32]int64{0: 40})
	f, err := kafka.NewSource(kafka.SourceConfig{Name: "src", Brokers: b.Addrs(), Topics: []string{"t"}, Stream: "s", Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, f, sdktest.WithGuarantee(sdk.ExactlyOnce))
	pollUntil(t, h, "s", 60)
	if got := string(h.Output("s")[0].Value); got != "40" {
		t.Fatalf("started at record %s, want 40 (the group's offset)", got)
	}
	must(t, "Checkpoint(1)", h.Checkpoint(1))
	must(t, "Complete(1)", h.Complete(1))
	waitCommitted(t, b, "g", "t", map[int32]int64{0: 100})
}
