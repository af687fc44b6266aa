package kafka_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connectors/kafka"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// brokerWithRecords starts a broker with a one-partition topic "t" that
// holds records "0" to "n-1".
func brokerWithRecords(t *testing.T, n int) *kafkatest.Broker {
	t.Helper()
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	if err := b.CreateTopic(context.Background(), "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	produce(t, b, numbered("t", 0, n)...)
	return b
}

func values(recs []sdk.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

func numbered(topic string, from, to int) []*kgo.Record {
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(strconv.Itoa(i))})
	}
	return recs
}

func TestSourceRewindsToItsLastDurablePosition(t *testing.T) {
	b := brokerWithRecords(t, 100)
	ctx := context.Background()
	f, err := kafka.NewSource(kafka.SourceConfig{Name: "src", Brokers: b.Addrs(), Topics: []string{"t"}, Stream: "s", Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, f)

	pollUntil(t, h, "s", 100)
	pos, err := h.Position()
	if err != nil {
		t.Fatal(err)
	}
	produce(t, b, numbered("t", 100, 150)...)
	pollUntil(t, h, "s", 150)
	if err := h.Durable(pos); err != nil { // the first 100 are durable downstream
		t.Fatal(err)
	}
	sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "offset 100 committed", func() bool {
		got, err := b.Committed(ctx, "g", "t")
		return err == nil && got[0] == 100
	})

	// A node crashed: the 50 records after the durable position may be
	// lost downstream and must come again.
	if err := h.Rewind(); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, h, "s", 200)
	if got, want := values(h.Output("s")[150:]), values(h.Output("s")[100:150]); !slices.Equal(got, want) {
		t.Fatalf("after the rewind got %v…, want %v…", got[:3], want[:3])
	}
	// The position is also in state, under the same commit as the rest.
	if n := len(h.State()); n != 1 {
		t.Fatalf("state holds %d keys, want one position", n)
	}

	// A new incarnation (another node) starts from the committed offset.
	h2 := start(t, f)
	pollUntil(t, h2, "s", 50)
	if got := string(h2.Output("s")[0].Value); got != "100" {
		t.Fatalf("new instance started at record %s, want 100", got)
	}
}

func TestSourceStopsReadingWhileWhatItReadIsNotDurable(t *testing.T) {
	b := brokerWithRecords(t, 100)
	const maxUndurable = 5 * time.Millisecond
	f, err := kafka.NewSource(kafka.SourceConfig{Name: "src", Brokers: b.Addrs(), Topics: []string{"t"}, Stream: "s", Group: "g",
		MaxUndurable: maxUndurable})
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, f)
	start := time.Now()
	pollUntil(t, h, "s", 100)
	pos, err := h.Position() // the runtime tracks durability
	if err != nil {
		t.Fatal(err)
	}
	produce(t, b, numbered("t", 100, 150)...)
	if d := time.Since(start); d <= maxUndurable {
		time.Sleep(maxUndurable - d + time.Millisecond) // what it read is now older than MaxUndurable
	}
	// Nothing it read is durable yet: it must not read the 50 new records,
	// though each Poll would wait PollTimeout for them.
	for range 5 {
		if err := h.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(h.Output("s")); got != 100 {
		t.Fatalf("produced %d records with none durable for longer than MaxUndurable, want it to stop at 100", got)
	}
	// The first 100 become durable: it reads again.
	if err := h.Durable(pos); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, h, "s", 150)
}

func TestSourceSplitsPartitionsOverInstances(t *testing.T) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	ctx := context.Background()
	if err := b.CreateTopic(ctx, "t", 5, nil); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for p := range 5 {
		for i := range 10 {
			recs = append(recs, &kgo.Record{Topic: "t", Partition: int32(p), Value: []byte(strconv.Itoa(p*100 + i))})
		}
	}
	cl, err := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	f, err := kafka.NewSource(kafka.SourceConfig{Name: "src", Brokers: b.Addrs(), Topics: []string{"t"}, Stream: "s", Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{30, 20} { // partitions 0, 2, 4 and 1, 3
		h := start(t, f, sdktest.WithInstance(i))
		pollUntil(t, h, "s", want)
		for _, r := range h.Output("s") {
			if p, _ := strconv.Atoi(string(r.Value)); (p/100)%2 != i {
				t.Errorf("instance %d got a record of partition %d", i, p/100)
			}
		}
	}
}

func TestSourceReportsABrokerOutageAsTransient(t *testing.T) {
	b := brokerWithRecords(t, 10)
	f, err := kafka.NewSource(kafka.SourceConfig{Name: "src", Brokers: b.Addrs(), Topics: []string{"t"}, Stream: "s"})
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, f)
	pollUntil(t, h, "s", 10)

	b.Stop()
	var transient error
	sluicetest.WaitEvery(t, 20*time.Second, 20*time.Millisecond, "Poll to report the outage", func() bool {
		err := h.Poll()
		if err != nil && !errors.Is(err, sdk.ErrTransient) {
			t.Fatalf("Poll: %v, want a transient error", err)
		}
		transient = err
		return errors.Is(err, kafka.ErrUnavailable)
	})
	t.Logf("while the broker is down: %v", transient)
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	produce(t, b, numbered("t", 10, 20)...)
	pollUntil(t, h, "s", 20)
	if err := h.Poll(); err != nil {
		t.Fatalf("Poll after the restart: %v", err)
	}
}

func TestSourceConfigValidate(t *testing.T) {
	ok := kafka.SourceConfig{Name: "src", Brokers: []string{"127.0.0.1:9092"}, Topics: []string{"t"}, Stream: "s"}
	for _, tc := range []struct {
		name   string
		change func(*kafka.SourceConfig)
		field  string
	}{
		{"valid", func(*kafka.SourceConfig) {}, ""},
		{"no name", func(c *kafka.SourceConfig) { c.Name = "" }, "Name"},
		{"no brokers", func(c *kafka.SourceConfig) { c.Brokers = nil }, "Brokers"},
		{"broker without port", func(c *kafka.SourceConfig) { c.Brokers = []string{"localhost"} }, "Brokers"},
		{"no topics", func(c *kafka.SourceConfig) { c.Topics = nil }, "Topics"},
		{"bad topic", func(c *kafka.SourceConfig) { c.Topics = []string{"a b"} }, "Topics[0]"},
		{"no stream", func(c *kafka.SourceConfig) { c.Stream = "" }, "Stream"},
		{"name ..", func(c *kafka.SourceConfig) { c.Name = ".." }, "Name"},
		{"stream .", func(c *kafka.SourceConfig) { c.Stream = "." }, "Stream"},
		{"bad start", func(c *kafka.SourceConfig) { c.Start = 7 }, "Start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.change(&c)
			err := c.Validate()
			var ce *kafka.ConfigError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.field != "" && (!errors.As(err, &ce) || ce.Field != tc.field):
				t.Fatalf("got %v, want an error on field %s", err, tc.field)
			}
		})
	}
}
