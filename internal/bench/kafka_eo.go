package bench

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// Sizes of the exactly-once Kafka row: paced well within reach, long
// enough for several checkpoints.
const (
	kafkaEORecords = 50_000 // per run
	kafkaEORate    = 10_000 // records/s: 5 s, five checkpoints
)

// SluiceKafkaWordCountEO runs samples/kafka-wordcount exactly-once on the
// embedded runtime in this process: checkpoints every interval (0: 1 s)
// to a directory store (all kept, for their phases), the counts written in
// Kafka transactions committed when each checkpoint completes. The output is read by a read_committed
// consumer, so each latency runs from an input record's timestamp (its
// produce time; the sink writes it on the count) to the transaction
// holding its count being committed and read.
func SluiceKafkaWordCountEO(cfg KafkaWordCountConfig, interval time.Duration) (Result, error) {
	s, err := newKafkaScenario(cfg, "sluice-eo")
	if err != nil {
		return Result{}, err
	}
	defer s.close()
	s.committed = true
	var durs []time.Duration
	var phases []CheckpointPhases
	var ckErr error
	r, err := s.runSluice(func(dir string) (node.Config, func(), error) {
		store := filepath.Join(dir, "checkpoints")
		read := func() { durs, phases, ckErr = checkpointRecords(store) } // after the runtime stopped
		return node.Config{Guarantee: sdk.ExactlyOnce, Checkpoints: store, CheckpointInterval: interval, CheckpointsKept: 100_000,
			Telemetry: &node.TelemetryConfig{}}, read, nil
	})
	if err == nil {
		err = ckErr
	}
	r.Checkpoints, r.CheckpointPhases = durs, phases
	return r, err
}

// kafkaEORows measures the exactly-once output latency to a
// read_committed consumer, paced at kafkaEORate.
func (t *tabler) kafkaEORows() ([]row, error) {
	b, err := kafkatest.NewBroker(kafkatest.BrokerConfig{})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	const interval = time.Second
	rs, err := t.measure("sluice kafka word count, exactly-once, read_committed", func() (Result, error) {
		return SluiceKafkaWordCountEO(KafkaWordCountConfig{Broker: b, Records: kafkaEORecords, Rate: kafkaEORate}, interval)
	})
	if err != nil {
		return nil, err
	}
	return append([]row{{"sluice kafka word count exactly-once: output latency p50 / p99", fmt.Sprintf("%s / %s", fmtDur(medianPct(rs, 50)), fmtDur(medianPct(rs, 99))), "", "",
		fmt.Sprintf("produce time → seen by a read_committed consumer; kfake, %d records/s paced, checkpoints every %v; target p99 ≤ %v",
			kafkaEORate, interval, interval+250*time.Millisecond)}}, checkpointRows(rs)...), nil
}
