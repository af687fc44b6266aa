package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/control/api"
)

// request checks a request's query and body and decodes its body into
// body. Every handler calls it first, so that the rules are the same
// everywhere: a query parameter not in params is refused; a handler
// without a body (body nil) refuses one; a body is read up to
// Limits.MaxBodyBytes and decoded with api.Decode. On a problem it writes
// the error answer and returns false.
func (s *Server) request(w http.ResponseWriter, r *http.Request, body any, params ...string) bool {
	for name := range r.URL.Query() {
		if !slices.Contains(params, name) {
			want := "takes no query parameters"
			if len(params) > 0 {
				want = "takes only " + strings.Join(params, ", ")
			}
			writeError(w, http.StatusBadRequest, fmt.Errorf("unknown query parameter %q: %s %s %s", name, r.Method, r.URL.Path, want))
			return false
		}
	}
	if body == nil {
		if r.ContentLength != 0 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("%s %s takes no request body", r.Method, r.URL.Path))
			return false
		}
		return true
	}
	if !checkJSON(w, r) {
		return false
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.Limits.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request body larger than %d bytes: split the deployment, or raise the node's limit (control.Limits.MaxBodyBytes)", tooBig.Limit))
		return false
	case err != nil:
		writeError(w, http.StatusBadRequest, fmt.Errorf("read request body: %w", err))
		return false
	}
	if err := api.Decode(data, body); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("bad request body: %w", err))
		return false
	}
	return true
}

// writeJSON answers v with code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// writeError answers err with code.
func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, api.Error{Error: err.Error()})
}
