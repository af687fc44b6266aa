package control

import (
	"context"

	"github.com/sluicehq/sluice/control/api"
)

// SetExternalStatus makes the status include what a launcher outside the
// node reports, before Serve: its processes and its pending reasons (the
// Mesos framework's tasks, as mesosstatus.Reader reads them).
func (s *Server) SetExternalStatus(f func(ctx context.Context) ([]api.LaunchedView, []string)) {
	s.external = f
}
