package node

import (
	"time"

	"github.com/sluicehq/sluice/console"
	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/telemetry"
)

// ConsoleURL returns the URL of the node's web console (package console):
// its control API's base URL and /ui/; "" when the control API is off.
func (r *Runtime) ConsoleURL() string {
	if r.http == nil {
		return ""
	}
	return r.http.URL() + console.Path
}

// showLatencies makes the latency quantiles tel measures part of srv's
// status and console.
func showLatencies(srv *control.Server, tel *telemetry.Telemetry) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	srv.SetLatencies(func() map[string]map[int]api.Latency {
		out := map[string]map[int]api.Latency{}
		for _, l := range tel.Latencies() {
			if out[l.Operator] == nil {
				out[l.Operator] = map[int]api.Latency{}
			}
			out[l.Operator][l.Index] = api.Latency{Timed: l.Timed, ProcessP50: ms(l.ProcessP50), ProcessP99: ms(l.ProcessP99),
				EndToEndP50: ms(l.EndToEndP50), EndToEndP99: ms(l.EndToEndP99)}
		}
		return out
	})
}
