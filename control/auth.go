package control

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/console"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/creds"
)

// principal is who made a request, as the authenticator established.
type principal struct {
	role api.Role
	// name is for logs and errors: "token sha256:…", "certificate alice",
	// "anonymous".
	name string
}

// authenticator turns a request's credentials into a principal.
type authenticator struct {
	enabled   bool
	tokens    *creds.Tokens // nil: no tokens
	tls       *creds.Source // nil: no TLS
	certRoles map[string]api.Role
}

// authError is a request without a valid credential (401) or one whose
// certificate has no role (403).
type authError struct {
	code int
	msg  string
}

func (e *authError) Error() string { return e.msg }

// identify returns who made r. Without authentication configured everyone
// is an anonymous admin.
func (a *authenticator) identify(r *http.Request) (principal, error) {
	if !a.enabled {
		return principal{role: api.RoleAdmin, name: "anonymous"}, nil
	}
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return principal{}, &authError{http.StatusUnauthorized, "the Authorization header must be \"Bearer TOKEN\""}
		}
		token = strings.TrimSpace(token)
		if a.tokens == nil {
			return principal{}, &authError{http.StatusUnauthorized, "this node accepts no tokens: authenticate with a client certificate"}
		}
		label, ok := a.tokens.Lookup(token)
		if !ok {
			return principal{}, &authError{http.StatusUnauthorized, "the token is not valid on this node (unknown or revoked)"}
		}
		return principal{role: api.Role(label), name: "token " + creds.Fingerprint(token)}, nil
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && a.tls != nil && a.tls.HasCA() {
		id, err := a.tls.ClientIdentity(*r.TLS)
		if err != nil {
			return principal{}, &authError{http.StatusUnauthorized, err.Error()}
		}
		role, ok := a.certRoles[id]
		if !ok {
			role, ok = a.certRoles["*"]
		}
		if !ok {
			return principal{}, &authError{http.StatusForbidden, fmt.Sprintf("the client certificate %q has no role on this node (control security: certificate roles)", id)}
		}
		return principal{role: role, name: "certificate " + id}, nil
	}
	return principal{}, &authError{http.StatusUnauthorized, "authentication required: send \"Authorization: Bearer TOKEN\" or a client certificate"}
}

// principalKey is the context key of a request's principal.
type principalKey struct{}

// who returns the principal of a request that passed the authenticator.
func who(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

// ServeHTTP refuses requests for other hosts and cross-origin changes
// (guard), authenticates every request but GET /healthz and the console's
// pages, then routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.guard(w, r) {
		return
	}
	if console.Public(r.URL.Path) {
		s.mux.ServeHTTP(w, r)
		return
	}
	if r.URL.Path == "/healthz" {
		s.mux.ServeHTTP(w, r)
		return
	}
	p, err := s.auth.identify(r)
	if err != nil {
		var ae *authError
		code := http.StatusUnauthorized
		if errors.As(err, &ae) {
			code = ae.code
		}
		if code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
		}
		writeError(w, code, err)
		return
	}
	if s.auth.enabled {
		s.conns.authenticated(r)
	}
	s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
}

// need wraps h so that it answers 403 to a principal whose role does not
// allow role.
func need(role api.Role, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := who(r.Context())
		if !p.role.Allows(role) {
			writeJSON(w, http.StatusForbidden, api.Error{
				Error: fmt.Sprintf("%s has the role %s; %s %s needs the role %s", p.name, p.role, r.Method, r.URL.Path, role),
				Role:  p.role, Need: role,
			})
			return
		}
		h(w, r)
	}
}
