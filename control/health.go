package control

import (
	"net/http"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/control/api"
)

// healthNode is a Node that reports its health (actors.Node does); a Node
// without it counts as healthy while it answers.
type healthNode interface {
	Health() status.Health
}

var _ healthNode = (*actors.Node)(nil)

// health returns the node's health, or nil if it does not report one.
func (s *Server) health() *api.NodeHealth {
	hn, ok := s.node.(healthNode)
	if !ok {
		return nil
	}
	h := hn.Health()
	return &api.NodeHealth{Healthy: h.Healthy, Reason: h.Reason, Cause: h.Cause.String(), Fatal: h.Fatal,
		DiskFree: h.DiskFree, DiskTotal: h.DiskTotal, Since: h.Since}
}

// healthz answers GET /healthz: 200 "ok" while the node takes work, else
// 503 with the reason (a full disk, a failed state database). It needs no
// credential (load balancers and supervisors probe it), so it says no more
// than the reason.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if h := s.health(); h != nil && !h.Healthy {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("unhealthy: " + h.Reason + "\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
