package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/status"
)

// Node health metrics (see status.Health).
const (
	// MetricNodeHealthy is 1 while the node takes work and 0 while it is
	// unhealthy, with AttrHealthCause saying why (disk-full,
	// store-failed); gauge, no unit. The reason in words is in GET /healthz and
	// the status.
	MetricNodeHealthy = "sluice.node.healthy"
	// MetricNodeDiskFree is the free space on the node's data directory's
	// file system; gauge, By.
	MetricNodeDiskFree = "sluice.node.disk.free"
)

// AttrHealthCause is why a node is unhealthy in MetricNodeHealthy.
const AttrHealthCause = attribute.Key("sluice.node.health.cause")

// healthNode is a Node that reports its health (actors.Node does).
type healthNode interface {
	Health() status.Health
}

var _ healthNode = (*actors.Node)(nil)

// registerHealth creates the node health instruments on meter, reading the
// node m is attached to.
func (m *metrics) registerHealth(meter metric.Meter) error {
	healthy, err := meter.Int64ObservableGauge(MetricNodeHealthy,
		metric.WithDescription("1 while the node takes work; 0 while it is unhealthy (a full disk, a failed state database)."))
	if err != nil {
		return fmt.Errorf("telemetry: create health instruments: %w", err)
	}
	free, err := meter.Int64ObservableGauge(MetricNodeDiskFree, metric.WithUnit("By"),
		metric.WithDescription("Free space on the file system of the node's data directory."))
	if err != nil {
		return fmt.Errorf("telemetry: create health instruments: %w", err)
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		ref := m.node.Load()
		if ref == nil {
			return nil
		}
		hn, ok := ref.Node.(healthNode)
		if !ok {
			return nil
		}
		h := hn.Health()
		if h.Healthy {
			o.ObserveInt64(healthy, 1)
		} else {
			o.ObserveInt64(healthy, 0, metric.WithAttributes(AttrHealthCause.String(h.Cause.String())))
		}
		o.ObserveInt64(free, int64(min(h.DiskFree, 1<<62)))
		return nil
	}, healthy, free)
	if err != nil {
		return fmt.Errorf("telemetry: register health callback: %w", err)
	}
	return nil
}
