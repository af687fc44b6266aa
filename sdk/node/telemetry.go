package node

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/telemetry"
)

// TelemetryConfig configures OpenTelemetry traces and metrics; see
// package telemetry. Its zero value turns telemetry off.
type TelemetryConfig = telemetry.Config

// TelemetryFromEnv returns the telemetry configuration that a nil
// Config.Telemetry means: telemetry.DefaultConfig with the standard OTEL_*
// variables and SLUICE_TRACE_SAMPLE applied (see telemetry.FromEnv).
func TelemetryFromEnv() (TelemetryConfig, error) { return telemetry.FromEnv() }

// telemetryStopTimeout bounds the final flush of spans and metrics.
const telemetryStopTimeout = 5 * time.Second

// startTelemetry builds the node's telemetry from cfg.Telemetry (nil: the
// environment) and mounts /metrics on srv (nil: none), which must not
// serve yet. Its Observer is nil when telemetry is off.
func startTelemetry(ctx context.Context, cfg Config, srv *control.Server) (*telemetry.Telemetry, error) {
	var tc TelemetryConfig
	if cfg.Telemetry != nil {
		tc = *cfg.Telemetry
	} else {
		var err error
		if tc, err = telemetry.FromEnv(); err != nil {
			return nil, fmt.Errorf("node: start: %w", err)
		}
	}
	if srv == nil {
		tc.Prometheus = false // no HTTP server to serve /metrics on
	}
	node := cfg.NodeID
	if node == "" {
		node = actors.DefaultConfig().NodeID
	}
	t, err := telemetry.New(ctx, node, tc)
	if err != nil {
		return nil, fmt.Errorf("node: start: %w", err)
	}
	if h := t.Handler(); h != nil {
		srv.Handle("GET /metrics", h)
	}
	return t, nil
}

// stopTelemetry flushes and shuts down the runtime's telemetry, after the
// node stopped.
func (r *Runtime) stopTelemetry() error {
	ctx, cancel := context.WithTimeout(context.Background(), telemetryStopTimeout)
	defer cancel()
	return r.telemetry.Shutdown(ctx)
}
