package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/runtime"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/sluicehq/sluice/actors/status"
)

// ScopeName is the instrumentation scope of Sluice's spans and metrics.
const ScopeName = "github.com/sluicehq/sluice/telemetry"

// Telemetry is one node's OpenTelemetry instrumentation: a span queue
// feeding the span exporters, a meter provider of its own (the global
// providers are left alone), the status.Observer that feeds them, and the
// Prometheus handler.
//
// Its life: New, then Observer goes into actors.Config.Observer and
// Handler is mounted at /metrics before the node starts; Attach once the
// node runs; Shutdown after the node stopped, which flushes what is still
// buffered. A nil *Telemetry is valid and does nothing.
type Telemetry struct {
	obs     *observer
	spans   *spanQueue
	mp      *sdkmetric.MeterProvider
	metrics *metrics
	handler http.Handler

	shutdownOnce sync.Once
	shutdownErr  error
}

// New builds the telemetry of node (its ID, the resource's
// service.instance.id) from cfg. It starts no goroutine for a config that
// turns everything off. Exporters connect lazily: New does not fail when
// the collector is down.
func New(ctx context.Context, node string, cfg Config) (_ *Telemetry, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Telemetry{}
	if !cfg.tracing() && !cfg.metrics() {
		return t, nil
	}
	defer func() {
		if err != nil {
			_ = t.Shutdown(ctx)
		}
	}()
	res, err := newResource(ctx, node, cfg.ServiceName)
	if err != nil {
		return nil, err
	}
	t.obs = &observer{sampler: newSampler(Sampling{})}
	if cfg.tracing() {
		if err := t.startTracing(ctx, cfg, res); err != nil {
			return nil, err
		}
	}
	if cfg.metrics() {
		if err := t.startMetrics(ctx, cfg, res); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// newResource describes the node: service.name, service.instance.id, the
// host and the SDK, then OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
func newResource(ctx context.Context, node, service string) (*resource.Resource, error) {
	if service == "" {
		service = "sluice"
	}
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithAttributes(semconv.ServiceName(service), semconv.ServiceInstanceID(node)),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource (check OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	return res, nil
}

func (t *Telemetry) startTracing(ctx context.Context, cfg Config, res *resource.Resource) error {
	opts, err := queueOptionsFromEnv()
	if err != nil {
		return err
	}
	var exps []sdktrace.SpanExporter
	var exp sdktrace.SpanExporter
	switch cfg.TraceExport {
	case ExportGRPC:
		exp, err = otlptracegrpc.New(ctx)
	case ExportHTTP:
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return fmt.Errorf("telemetry: OTLP span exporter (%s): %w", cfg.TraceExport, err)
	}
	if exp != nil {
		exps = append(exps, exp)
	}
	if cfg.SpanExporter != nil {
		exps = append(exps, cfg.SpanExporter)
	}
	// Sources decide which records are traced (Config.Sampling); later
	// operators follow the sampled flag of the record's trace header.
	t.spans = newSpanQueue(res, opts, exps...)
	t.obs.spans = t.spans
	t.obs.sampler = newSampler(cfg.Sampling)
	return nil
}

func (t *Telemetry) startMetrics(ctx context.Context, cfg Config, res *resource.Resource) error {
	t.metrics = newMetrics()
	opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if cfg.Prometheus {
		// A registry of our own, so that two runtimes in one process (tests)
		// do not collide in the global one.
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithProducer(t.metrics),
			otelprom.WithResourceAsConstantLabels(attribute.NewAllowKeysFilter(semconv.ServiceNameKey, semconv.ServiceInstanceIDKey)))
		if err != nil {
			return fmt.Errorf("telemetry: Prometheus exporter: %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(exp))
		t.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	}
	var exp sdkmetric.Exporter
	var err error
	switch cfg.MetricExport {
	case ExportGRPC:
		exp, err = otlpmetricgrpc.New(ctx)
	case ExportHTTP:
		exp, err = otlpmetrichttp.New(ctx)
	}
	if err != nil {
		return fmt.Errorf("telemetry: OTLP metric exporter (%s): %w", cfg.MetricExport, err)
	}
	for _, e := range []sdkmetric.Exporter{exp, cfg.MetricExporter} {
		if e == nil {
			continue
		}
		ropts := []sdkmetric.PeriodicReaderOption{sdkmetric.WithProducer(t.metrics)}
		if cfg.MetricInterval > 0 {
			ropts = append(ropts, sdkmetric.WithInterval(cfg.MetricInterval))
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(e, ropts...)))
	}
	t.mp = sdkmetric.NewMeterProvider(opts...)
	meter := t.mp.Meter(ScopeName)
	if err := t.metrics.register(meter); err != nil {
		return err
	}
	t.obs.metrics = t.metrics
	if cfg.RuntimeMetrics {
		if err := runtime.Start(runtime.WithMeterProvider(t.mp)); err != nil {
			return fmt.Errorf("telemetry: Go runtime metrics: %w", err)
		}
		if err := registerProcess(meter); err != nil {
			return err
		}
	}
	return nil
}

// Observer returns the observer to set as actors.Config.Observer, or nil
// when telemetry is off (so that the runtime skips its hooks).
func (t *Telemetry) Observer() status.Observer {
	if t == nil || t.obs == nil {
		return nil
	}
	return t.obs
}

// Handler returns the Prometheus /metrics handler, or nil when
// Config.Prometheus is off.
func (t *Telemetry) Handler() http.Handler {
	if t == nil {
		return nil
	}
	return t.handler
}

// Attach makes the metrics read node's status at each collection. Call it
// once the node runs; before, the per-operator metrics are empty.
func (t *Telemetry) Attach(node Node) {
	if t == nil || t.metrics == nil || node == nil {
		return
	}
	t.metrics.node.Store(&nodeRef{node})
}

// Flush exports the spans and metrics buffered so far, waiting until ctx
// is done at most.
func (t *Telemetry) Flush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.spans != nil {
		errs = append(errs, t.spans.export(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.ForceFlush(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry: flush: %w", err)
	}
	return nil
}

// Shutdown flushes buffered spans and metrics to the exporters and shuts
// them down, waiting until ctx is done at most. Call it after the node
// stopped. It is safe to call twice; later calls return the first's
// result.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.shutdownOnce.Do(func() {
		var errs []error
		if t.spans != nil {
			errs = append(errs, t.spans.shutdown(ctx))
		}
		if t.mp != nil {
			errs = append(errs, t.mp.Shutdown(ctx))
		}
		if err := errors.Join(errs...); err != nil {
			t.shutdownErr = fmt.Errorf("telemetry: shutdown: %w", err)
		}
	})
	return t.shutdownErr
}
