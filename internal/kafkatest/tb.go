package kafkatest

import "github.com/sluicehq/sluice/internal/proctest"

// TB is the part of testing.TB this package uses (proctest.TB), so that
// benchmarks run outside "go test" can pass their own.
type TB = proctest.TB
