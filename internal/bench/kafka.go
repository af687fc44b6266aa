package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connectors/kafka"
	"github.com/sluicehq/sluice/internal/kafkatest"
	kafkawordcount "github.com/sluicehq/sluice/samples/kafka-wordcount"
	"github.com/sluicehq/sluice/sdk/node"
)

// KafkaWordCountConfig sets up the Kafka word count scenarios: the same
// words (key and value: the word) are written to an input topic, counted
// per word, and every new count is written to an output topic. Zero fields
// take defaults.
type KafkaWordCountConfig struct {
	// Broker is the kfake cluster to run on; nil means a fresh one for
	// this run only.
	Broker *kafkatest.Broker
	// Records is the number of words written; 0 means 100,000.
	Records int
	// Words is the vocabulary; 0 means 10,000.
	Words int
	// Partitions of the input and output topics; 0 means 8.
	Partitions int
	// Rate paces the input (records/s); 0 writes as fast as the broker
	// takes it, while the processor runs (saturated).
	Rate float64
}

func (c KafkaWordCountConfig) withDefaults() KafkaWordCountConfig {
	if c.Records == 0 {
		c.Records = 100_000
	}
	if c.Words == 0 {
		c.Words = 10_000
	}
	if c.Partitions == 0 {
		c.Partitions = 8
	}
	return c
}

// kafkaRun numbers runs, so that each uses topics and groups of its own on
// a shared broker.
var kafkaRun atomic.Int64

// kafkaScenario is one run's topics and broker.
type kafkaScenario struct {
	cfg         KafkaWordCountConfig
	b           *kafkatest.Broker
	in, out, id string
	close       func()
	// committed reads the output as a read_committed consumer (records
	// of open or aborted transactions are not seen).
	committed bool
}

func newKafkaScenario(cfg KafkaWordCountConfig, name string) (*kafkaScenario, error) {
	cfg = cfg.withDefaults()
	s := &kafkaScenario{cfg: cfg, b: cfg.Broker, close: func() {}}
	if s.b == nil {
		b, err := kafkatest.NewBroker(kafkatest.BrokerConfig{})
		if err != nil {
			return nil, err
		}
		s.b, s.close = b, b.Close
	}
	s.id = fmt.Sprintf("%s-%d", name, kafkaRun.Add(1))
	s.in, s.out = s.id+".words", s.id+".counts"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, t := range []string{s.in, s.out} {
		if err := s.b.CreateTopic(ctx, t, int32(cfg.Partitions), nil); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

// warmup is the number of words written, and counted, before the clock
// starts: the processor has then joined, connected and created its topics.
const warmup = 1000

// run writes the input while the processor (already started) counts, and
// reads the output until every input record has its count. inputTime
// extracts an output record's input timestamp. It first writes warmup
// words ("warm…", not measured) and waits for their counts, so that the
// figures are those of a running processor, not of its start.
func (s *kafkaScenario) run(inputTime func(*kgo.Record) (time.Time, bool)) (Result, error) {
	n := s.cfg.Records
	var (
		mu       sync.Mutex
		lat      = make([]time.Duration, 0, n)
		warm     int
		last     time.Time
		bad      int
		warmed   = make(chan struct{})
		complete = make(chan struct{})
	)
	newTail := kafkatest.NewTail
	if s.committed {
		newTail = kafkatest.NewCommittedTail
	}
	tail, err := newTail(s.b.Addrs(), func(r *kgo.Record) {
		now := time.Now()
		t, ok := inputTime(r)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case !ok:
			bad++
		case bytes.HasPrefix(r.Key, []byte("warm")):
			if warm++; warm == warmup {
				close(warmed)
			}
		default:
			lat = append(lat, now.Sub(t))
			last = now
			if len(lat) == n {
				close(complete)
			}
		}
	}, s.out)
	if err != nil {
		return Result{}, err
	}
	defer tail.Close()
	cl, err := s.b.Client()
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	var perr atomic.Pointer[error]
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			perr.CompareAndSwap(nil, &err)
		}
	}
	write := func(w []byte) { cl.Produce(context.Background(), &kgo.Record{Topic: s.in, Key: w, Value: w}, promise) }
	timeout := func(what string) error {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("bench: %s: %s after 5 minutes: %d warm-up and %d of %d counts (%d unreadable)", s.id, what, warm, len(lat), n, bad)
	}
	for i := range warmup {
		write([]byte("warm" + strconv.Itoa(i)))
	}
	select {
	case <-warmed:
	case <-time.After(5 * time.Minute):
		return Result{}, timeout("not warmed up")
	}

	words := make([][]byte, s.cfg.Words)
	for i := range words {
		words[i] = []byte("w" + strconv.Itoa(i))
	}
	start := time.Now()
	for i := range n {
		if s.cfg.Rate > 0 && i%64 == 0 {
			if d := time.Until(start.Add(time.Duration(float64(i) / s.cfg.Rate * float64(time.Second)))); d > 0 {
				time.Sleep(d) // pacing
			}
		}
		write(words[int(uint64(i)*0x9e3779b97f4a7c15>>32)%len(words)])
	}
	if err := cl.Flush(context.Background()); err != nil {
		return Result{}, err
	}
	if e := perr.Load(); e != nil {
		return Result{}, fmt.Errorf("bench: write words: %w", *e)
	}
	select {
	case <-complete:
	case <-time.After(5 * time.Minute):
		return Result{}, timeout("not done")
	}
	mu.Lock()
	defer mu.Unlock()
	return Result{Ops: int64(n), Elapsed: last.Sub(start), Latencies: lat}, nil
}

// SluiceKafkaWordCount runs samples/kafka-wordcount on the embedded runtime
// in this process, as deployed in production: at-least-once delivery
// (offsets committed once the counts are in Kafka), counter state mirrored
// to a Kafka changelog, idempotent producer. Latency runs from an input
// record's timestamp to its count being read from the output topic (the
// sink writes the input's timestamp).
func SluiceKafkaWordCount(cfg KafkaWordCountConfig) (Result, error) {
	s, err := newKafkaScenario(cfg, "sluice")
	if err != nil {
		return Result{}, err
	}
	defer s.close()
	return s.runSluice(func(dir string) (node.Config, func(), error) {
		sl, err := kafka.NewStateLog(kafka.StateLogConfig{Brokers: s.b.Addrs(), Prefix: s.id})
		if err != nil {
			return node.Config{}, nil, err
		}
		return node.Config{NodeConfig: node.NodeConfig{AtLeastOnce: true, StateLog: sl}}, func() { sl.Close() }, nil
	})
}

// runSluice runs samples/kafka-wordcount on the embedded runtime with the
// guarantee settings mode returns (given the run's data directory; its
// cleanup runs after the runtime stopped), and measures it (run).
func (s *kafkaScenario) runSluice(mode func(dir string) (node.Config, func(), error)) (Result, error) {
	dir, err := os.MkdirTemp("", "sluice-bench-kafka-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	scfg, cleanup, err := mode(dir)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	ops, err := kafkawordcount.Operators(kafkawordcount.Config{
		Brokers: s.b.Addrs(), Input: s.in, Output: s.out, DeadLetters: s.id + ".dlq", Group: s.id,
		SourceParallelism: 2, CountParallelism: 2, SinkParallelism: 2,
	})
	if err != nil {
		return Result{}, err
	}
	scfg.NodeID, scfg.DataDir, scfg.NoSync = "bench", dir, true
	scfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	rt, err := node.Start(context.Background(), scfg, ops...)
	if err != nil {
		return Result{}, err
	}
	defer rt.Stop(context.Background())
	return s.run(func(r *kgo.Record) (time.Time, bool) {
		_, err := kafkawordcount.ParseCount(r.Value)
		return r.Timestamp, err == nil
	})
}
