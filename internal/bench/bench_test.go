package bench

import "testing"

func BenchmarkProtoactorChain(b *testing.B) {
	r, err := ProtoactorChain(b.N * 1000)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.PerSec(), "msgs/s")
}

func BenchmarkWordCount(b *testing.B) {
	r, err := WordCount(WordCountConfig{Records: b.N * 100_000, Keys: 10_000})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.PerSec(), "records/s")
	b.ReportMetric(float64(r.Percentile(50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(r.Percentile(99).Microseconds()), "p99-µs")
}
