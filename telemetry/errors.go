package telemetry

import "errors"

// Errors of package telemetry; callers branch on them with errors.Is.
var (
	// ErrInvalidSampling: a sampling rate is negative or malformed.
	ErrInvalidSampling = errors.New("telemetry: invalid sampling")
	// ErrUnsupportedProtocol: an OTLP protocol other than grpc or
	// http/protobuf.
	ErrUnsupportedProtocol = errors.New("telemetry: unsupported OTLP protocol")
	// ErrUnsupportedExporter: an OTEL_TRACES_EXPORTER or
	// OTEL_METRICS_EXPORTER value Sluice does not implement.
	ErrUnsupportedExporter = errors.New("telemetry: unsupported exporter")
)
