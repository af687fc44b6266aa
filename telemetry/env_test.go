package telemetry

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Config
	}{
		{"nothing set: Prometheus only", nil, DefaultConfig()},
		{"endpoint: OTLP/HTTP for both", map[string]string{EnvEndpoint: "http://collector:4318"},
			with(DefaultConfig(), func(c *Config) { c.TraceExport, c.MetricExport = ExportHTTP, ExportHTTP })},
		{"gRPC", map[string]string{EnvEndpoint: "http://collector:4317", EnvProtocol: "grpc"},
			with(DefaultConfig(), func(c *Config) { c.TraceExport, c.MetricExport = ExportGRPC, ExportGRPC })},
		{"per-signal protocol and endpoint", map[string]string{EnvTracesEndpoint: "http://c:4317", EnvTracesProtocol: "GRPC", EnvProtocol: "http/protobuf"},
			with(DefaultConfig(), func(c *Config) { c.TraceExport = ExportGRPC })},
		{"exporter lists", map[string]string{EnvTracesExporter: "otlp", EnvMetricsExporter: "otlp"},
			with(DefaultConfig(), func(c *Config) { c.TraceExport, c.MetricExport, c.Prometheus = ExportHTTP, ExportHTTP, false })},
		{"none wins over an endpoint", map[string]string{EnvEndpoint: "http://c:4318", EnvTracesExporter: "none", EnvMetricsExporter: "prometheus"},
			DefaultConfig()},
		{"no Prometheus", map[string]string{EnvMetricsExporter: "none"},
			with(DefaultConfig(), func(c *Config) { c.Prometheus = false })},
		{"service name and sampling", map[string]string{EnvServiceName: "ads", EnvSample: "10,clicks=0"},
			with(DefaultConfig(), func(c *Config) {
				c.ServiceName, c.Sampling = "ads", Sampling{Every: 10, Operators: map[string]int{"clicks": 0}}
			})},
		{"disabled", map[string]string{EnvSDKDisabled: "TRUE", EnvEndpoint: "http://c:4318"}, Config{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fromEnv(func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatalf("fromEnv: %v", err)
			}
			if got.String() != tc.want.String() {
				t.Fatalf("fromEnv:\n got %s\nwant %s", got.String(), tc.want.String())
			}
		})
	}
}

func TestFromEnvRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want error
	}{
		{"console exporter", map[string]string{EnvTracesExporter: "console"}, ErrUnsupportedExporter},
		{"json protocol", map[string]string{EnvEndpoint: "http://c:4318", EnvProtocol: "http/json"}, ErrUnsupportedProtocol},
		{"bad sampling", map[string]string{EnvSample: "often"}, ErrInvalidSampling},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fromEnv(func(k string) string { return tc.env[k] })
			if !errors.Is(err, tc.want) {
				t.Fatalf("fromEnv: got %v, want %v", err, tc.want)
			}
		})
	}
}

func with(c Config, f func(*Config)) Config {
	f(&c)
	return c
}

func TestNewReportsBadResourceAttributes(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "no-value")
	tel, err := New(context.Background(), "n1", Config{Prometheus: true})
	if err == nil || !strings.Contains(err.Error(), "OTEL_RESOURCE_ATTRIBUTES") {
		_ = tel.Shutdown(context.Background())
		t.Fatalf("New with OTEL_RESOURCE_ATTRIBUTES=no-value: got error %v, want one naming the variable", err)
	}
}
