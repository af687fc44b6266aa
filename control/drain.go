package control

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/control/api"
)

// DefaultDrainTimeout is how long POST /v1/node/drain waits for the
// drain when the request gives no timeout.
const DefaultDrainTimeout = 30 * time.Second

// drainer is implemented by nodes that can hand their instances to the
// others and stay running (actors.Node.Drain).
type drainer interface {
	Drain(ctx context.Context) error
}

// drainNode answers POST /v1/node/drain[?timeout=30s]: this node hands its
// instances, live and with their state, to the other members (the path a
// node leaving on Stop takes) and keeps running with none. 200 once
// drained (at once when it already is); 503 when the timeout passed first
// (the drain goes on: ask again); 409 when it cannot be drained (not in a
// cluster, stopping, or an operator whose kind no other member hosts).
func (s *Server) drainNode(w http.ResponseWriter, r *http.Request) {
	if !s.request(w, r, nil, "timeout") {
		return
	}
	d, ok := s.node.(drainer)
	if !ok {
		writeError(w, http.StatusNotImplemented, errors.New("this node cannot be drained"))
		return
	}
	timeout := DefaultDrainTimeout
	if v := r.URL.Query().Get("timeout"); v != "" {
		t, err := time.ParseDuration(v)
		if err != nil || t <= 0 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("timeout %q: want a positive duration such as 30s", v))
			return
		}
		timeout = t
	}
	// The answer must be written within the server's write timeout.
	if most := s.cfg.Limits.WriteTimeout - time.Second; most > 0 && timeout > most {
		timeout = most
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	err := d.Drain(ctx)
	switch {
	case err == nil:
		s.log.Info("control: node drained", "node", s.node.ID())
		writeJSON(w, http.StatusOK, api.DrainStatus{Node: s.node.ID(), Drained: true})
	case ctx.Err() != nil:
		writeError(w, http.StatusServiceUnavailable, fmt.Errorf("still draining after %v (it goes on; ask again): %w", timeout, err))
	default:
		writeError(w, http.StatusConflict, err)
	}
}
