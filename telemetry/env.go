package telemetry

import (
	"fmt"
	"os"
	"strings"
)

// Environment variables read by FromEnv. The OTLP exporters and the
// OpenTelemetry SDK read the other standard ones themselves:
// OTEL_EXPORTER_OTLP_{,TRACES_,METRICS_}{ENDPOINT,HEADERS,TIMEOUT,
// COMPRESSION,CERTIFICATE,INSECURE}, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_METRIC_EXPORT_INTERVAL; New reads OTEL_BSP_* for its span queue.
const (
	EnvSDKDisabled     = "OTEL_SDK_DISABLED"
	EnvServiceName     = "OTEL_SERVICE_NAME"
	EnvTracesExporter  = "OTEL_TRACES_EXPORTER"
	EnvMetricsExporter = "OTEL_METRICS_EXPORTER"
	EnvProtocol        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol  = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvMetricsProtocol = "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"
	EnvEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvMetricsEndpoint = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
	// EnvSample is Sluice's own: the sampling rate in ParseSampling's
	// syntax, e.g. "1000" or "100,clicks=1"; "0" turns tracing off.
	EnvSample = "SLUICE_TRACE_SAMPLE"
)

// FromEnv returns DefaultConfig with the standard OpenTelemetry
// environment variables applied:
//
//   - OTEL_SDK_DISABLED=true turns everything off (the zero Config).
//   - Spans are exported over OTLP when OTEL_TRACES_EXPORTER is "otlp", or
//     when it is unset and OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; "none" exports none.
//   - Metrics likewise with OTEL_METRICS_EXPORTER and the METRICS
//     endpoint. OTEL_METRICS_EXPORTER is a list: "otlp", "prometheus" (the
//     /metrics endpoint, on unless the list leaves it out) or "none".
//   - The transport is OTEL_EXPORTER_OTLP_{TRACES_,METRICS_,}PROTOCOL:
//     "grpc" or "http/protobuf" (the default, as the specification says).
//   - OTEL_SERVICE_NAME names the service; SLUICE_TRACE_SAMPLE sets the
//     sampling (see ParseSampling).
//
// A value it cannot use is an error naming the variable.
func FromEnv() (Config, error) { return fromEnv(os.Getenv) }

func fromEnv(getenv func(string) string) (Config, error) {
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return Config{}, nil
	}
	c := DefaultConfig()
	if v := strings.TrimSpace(getenv(EnvServiceName)); v != "" {
		c.ServiceName = v
	}
	if v := getenv(EnvSample); strings.TrimSpace(v) != "" {
		s, err := ParseSampling(v)
		if err != nil {
			return Config{}, fmt.Errorf("%s: %w", EnvSample, err)
		}
		c.Sampling = s
	}

	traces, err := exporters(getenv, EnvTracesExporter, "otlp", "none")
	if err != nil {
		return Config{}, err
	}
	if wantOTLP(getenv, traces, EnvTracesEndpoint) {
		if c.TraceExport, err = protocol(getenv, EnvTracesProtocol); err != nil {
			return Config{}, err
		}
	}

	metrics, err := exporters(getenv, EnvMetricsExporter, "otlp", "prometheus", "none")
	if err != nil {
		return Config{}, err
	}
	if metrics != nil {
		c.Prometheus = metrics["prometheus"]
	}
	if wantOTLP(getenv, metrics, EnvMetricsEndpoint) {
		if c.MetricExport, err = protocol(getenv, EnvMetricsProtocol); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

// exporters parses a comma-separated exporter list; nil when unset.
func exporters(getenv func(string) string, name string, known ...string) (map[string]bool, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return nil, nil
	}
	out := map[string]bool{}
	for e := range strings.SplitSeq(v, ",") {
		e = strings.ToLower(strings.TrimSpace(e))
		if !contains(known, e) {
			return nil, fmt.Errorf("%s=%q: %w %q (Sluice supports %s)", name, v, ErrUnsupportedExporter, e, strings.Join(known, ", "))
		}
		out[e] = true
	}
	return out, nil
}

// wantOTLP reports whether a signal is exported over OTLP: listed in its
// exporter variable, or that variable unset and an endpoint given.
func wantOTLP(getenv func(string) string, listed map[string]bool, signalEndpoint string) bool {
	if listed != nil {
		return listed["otlp"]
	}
	return strings.TrimSpace(getenv(EnvEndpoint)) != "" || strings.TrimSpace(getenv(signalEndpoint)) != ""
}

// protocol returns a signal's OTLP protocol.
func protocol(getenv func(string) string, signalVar string) (Protocol, error) {
	name, v := signalVar, strings.TrimSpace(getenv(signalVar))
	if v == "" {
		name, v = EnvProtocol, strings.TrimSpace(getenv(EnvProtocol))
	}
	if v == "" {
		return ExportHTTP, nil
	}
	p := Protocol(strings.ToLower(v))
	if err := p.validate(); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
