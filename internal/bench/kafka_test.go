package bench

import (
	"testing"

	"github.com/sluicehq/sluice/internal/kafkatest"
)

// The Kafka word count as a Goka processor and as a Sluice pipeline, each
// run on a fresh kfake broker: b.N × 100k words.

func BenchmarkGokaWordCount(b *testing.B) {
	benchKafka(b, GokaWordCount)
}

func BenchmarkSluiceKafkaWordCount(b *testing.B) {
	benchKafka(b, SluiceKafkaWordCount)
}

func benchKafka(b *testing.B, run func(KafkaWordCountConfig) (Result, error)) {
	broker, err := kafkatest.NewBroker(kafkatest.BrokerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer broker.Close()
	r, err := run(KafkaWordCountConfig{Broker: broker, Records: b.N * 100_000})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.PerSec(), "records/s")
	b.ReportMetric(float64(r.Percentile(50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(r.Percentile(99).Microseconds()), "p99-µs")
}
