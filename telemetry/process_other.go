//go:build !unix

package telemetry

import "go.opentelemetry.io/otel/metric"

// registerProcess adds no process metrics where getrusage is missing; the
// Go runtime metrics (go.memory.used and others) still describe memory.
func registerProcess(metric.Meter) error { return nil }
