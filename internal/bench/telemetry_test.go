package bench

import "testing"

// BenchmarkWordCountTelemetry is BenchmarkWordCount with telemetry on
// (TelemetryOn); compare the two records/s figures.
func BenchmarkWordCountTelemetry(b *testing.B) {
	r, err := WordCount(WordCountConfig{Records: b.N * 100_000, Keys: 10_000, Telemetry: TelemetryOn()})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.PerSec(), "records/s")
	b.ReportMetric(float64(r.Percentile(50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(r.Percentile(99).Microseconds()), "p99-µs")
}
