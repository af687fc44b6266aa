package mesos

import (
	"encoding/json"
	"net/http"
)

// Handler returns the scheduler's HTTP API: GET /v1/mesos/status answers
// Status() as JSON (the full status on the leader; the role, and problems,
// on a standby), and GET /healthz answers "ok". Run serves it on
// Config.HTTP; it can also be mounted elsewhere.
func (s *Scheduler) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /v1/mesos/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Status())
	})
	return mux
}
