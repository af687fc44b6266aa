package kafkatest

// TB is the part of testing.TB this package uses, so that benchmarks run
// outside "go test" can pass their own.
type TB interface {
	Helper()
	Cleanup(func())
	TempDir() string
	Logf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Failed() bool
}
