// Package bench holds Sluice's benchmark scenarios. Each scenario runs a
// fixed workload and returns its throughput (and latency where it has one);
// cmd/sluice-bench runs them several times and prints a table of medians
// with ratios between scenarios of the same run, and bench_test.go exposes
// them as Go benchmarks.
//
// Figures from shared, noisy machines are only comparable within one run:
// compare the ratios, not the absolute numbers, across machines.
//
// The nexmark group's results, and how they compare with Flink's
// published figures, are in docs/nexmark.md.
package bench
