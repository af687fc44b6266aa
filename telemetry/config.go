package telemetry

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// DefaultSampleEvery is the default sampling rate: a source starts a trace
// on one record in 1000.
const DefaultSampleEvery = 1000

// Protocol is an OTLP transport.
type Protocol string

// The OTLP transports. Their endpoint, headers, TLS settings, compression
// and timeout come from the standard OTEL_EXPORTER_OTLP_* variables, read
// by the OpenTelemetry exporters themselves.
const (
	// ExportNone exports nothing over OTLP.
	ExportNone Protocol = ""
	// ExportGRPC exports over OTLP/gRPC (default endpoint localhost:4317).
	ExportGRPC Protocol = "grpc"
	// ExportHTTP exports over OTLP/HTTP with protobuf bodies (default
	// endpoint localhost:4318).
	ExportHTTP Protocol = "http/protobuf"
)

// Config configures a node's telemetry.
//
// Unlike most Sluice configs, the zero Config is not "the defaults": it
// turns everything off, because a sampling rate of 0 means off (as it does
// in SLUICE_TRACE_SAMPLE). DefaultConfig is what most programs want, and
// FromEnv applies the standard OTEL_* variables to it.
type Config struct {
	// ServiceName is the service.name resource attribute; empty means
	// "sluice". OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set,
	// take precedence.
	ServiceName string
	// Sampling decides which records sources start traces on.
	Sampling Sampling
	// TraceExport sends spans over OTLP; ExportNone sends none.
	TraceExport Protocol
	// MetricExport sends metrics over OTLP every OTEL_METRIC_EXPORT_INTERVAL
	// (60 s unless set); ExportNone sends none.
	MetricExport Protocol
	// SpanExporter, when set, also receives the spans (tests, benchmarks,
	// other backends). It is shut down with the Telemetry.
	SpanExporter sdktrace.SpanExporter
	// MetricExporter, when set, also receives the metrics every
	// MetricInterval (tests, benchmarks, other backends). It is shut down
	// with the Telemetry.
	MetricExporter sdkmetric.Exporter
	// MetricInterval is how often metrics are exported (OTLP and
	// MetricExporter); 0 means OTEL_METRIC_EXPORT_INTERVAL, else 60 s.
	MetricInterval time.Duration
	// Prometheus serves the metrics in Prometheus' text format at /metrics
	// on the node's control HTTP address, when it has one.
	Prometheus bool
	// RuntimeMetrics adds the Go runtime metrics (go.*) and the process's
	// CPU time and memory (process.*).
	RuntimeMetrics bool
}

// DefaultConfig returns the configuration FromEnv starts from: sampling 1
// in DefaultSampleEvery, metrics served to Prometheus with the runtime
// metrics, and no OTLP export.
func DefaultConfig() Config {
	return Config{
		ServiceName:    "sluice",
		Sampling:       Sampling{Every: DefaultSampleEvery},
		Prometheus:     true,
		RuntimeMetrics: true,
	}
}

// Validate reports the invalid fields of c.
func (c Config) Validate() error {
	var errs []error
	if err := c.Sampling.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MetricInterval < 0 {
		errs = append(errs, fmt.Errorf("MetricInterval is %v, want ≥ 0 (0 = OTEL_METRIC_EXPORT_INTERVAL or 60 s)", c.MetricInterval))
	}
	for _, p := range []struct {
		field string
		p     Protocol
	}{{"TraceExport", c.TraceExport}, {"MetricExport", c.MetricExport}} {
		if err := p.p.validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.field, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: invalid config: %w", err)
	}
	return nil
}

// tracing reports whether c exports spans anywhere.
func (c Config) tracing() bool { return c.TraceExport != ExportNone || c.SpanExporter != nil }

// metrics reports whether c collects metrics anywhere.
func (c Config) metrics() bool {
	return c.MetricExport != ExportNone || c.MetricExporter != nil || c.Prometheus
}

// validate accepts the known protocols.
func (p Protocol) validate() error {
	switch p {
	case ExportNone, ExportGRPC, ExportHTTP:
		return nil
	}
	return fmt.Errorf("%w %q (want %q or %q)", ErrUnsupportedProtocol, string(p), ExportGRPC, ExportHTTP)
}

// Sampling says which records sources start traces on: one in Every of
// the records each source operator produces, or one in Operators[name] for
// the operators named there. 0 turns sampling off, globally (Every) or for
// one operator. Records that arrive already traced are traced on whatever
// the sampling.
type Sampling struct {
	Every     int
	Operators map[string]int
}

// ParseSampling parses the SLUICE_TRACE_SAMPLE syntax: a global rate and
// per-operator overrides, comma-separated, e.g. "1000", "0", "100,clicks=1"
// or "gen=10" (the global rate is DefaultSampleEvery when not given).
func ParseSampling(s string) (Sampling, error) {
	out := Sampling{Every: DefaultSampleEvery}
	global := false
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, rate, isOp := strings.Cut(part, "=")
		if !isOp {
			rate, name = name, ""
		}
		n, err := strconv.Atoi(strings.TrimSpace(rate))
		if err != nil || n < 0 {
			return Sampling{}, fmt.Errorf("%w: %q in %q: want a count N ≥ 0 (one record in N; 0 = off)", ErrInvalidSampling, part, s)
		}
		switch name = strings.TrimSpace(name); {
		case isOp && name == "":
			return Sampling{}, fmt.Errorf("%w: %q in %q: an override needs an operator name (operator=N)", ErrInvalidSampling, part, s)
		case isOp:
			if out.Operators == nil {
				out.Operators = map[string]int{}
			}
			out.Operators[name] = n
		case global:
			return Sampling{}, fmt.Errorf("%w: %q: more than one global rate", ErrInvalidSampling, s)
		default:
			out.Every, global = n, true
		}
	}
	return out, nil
}

// String formats s in the syntax ParseSampling reads.
func (s Sampling) String() string {
	parts := []string{strconv.Itoa(s.Every)}
	names := make([]string, 0, len(s.Operators))
	for name := range s.Operators {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		parts = append(parts, name+"="+strconv.Itoa(s.Operators[name]))
	}
	return strings.Join(parts, ",")
}

// validate rejects negative rates.
func (s Sampling) validate() error {
	if s.Every < 0 {
		return fmt.Errorf("%w: Sampling.Every is %d, want ≥ 0 (0 = off)", ErrInvalidSampling, s.Every)
	}
	for name, n := range s.Operators {
		if n < 0 {
			return fmt.Errorf("%w: Sampling.Operators[%q] is %d, want ≥ 0 (0 = off)", ErrInvalidSampling, name, n)
		}
	}
	return nil
}

// off reports whether s never samples.
func (s Sampling) off() bool {
	if s.Every > 0 {
		return false
	}
	for _, n := range s.Operators {
		if n > 0 {
			return false
		}
	}
	return true
}

// String describes c for logs, e.g. "service=sluice sampling=1000
// traces=grpc metrics=none prometheus=true runtime=true".
func (c Config) String() string {
	exp := func(p Protocol, extra bool) string {
		s := string(p)
		if p == ExportNone {
			s = "none"
		}
		if extra {
			s += "+custom"
		}
		return s
	}
	return fmt.Sprintf("service=%s sampling=%s traces=%s metrics=%s prometheus=%t runtime=%t",
		c.ServiceName, c.Sampling, exp(c.TraceExport, c.SpanExporter != nil), exp(c.MetricExport, c.MetricExporter != nil),
		c.Prometheus, c.RuntimeMetrics)
}
