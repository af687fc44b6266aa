package control

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"os"
	"strings"
)

// hostCheck admits the Host headers under which the API is reached: IP
// addresses, localhost, the host name of the listen address, this
// machine's host name and the names of Security.Hosts. A web page served
// from a name its attacker rebinds to this node's address (DNS rebinding)
// sends its own name, and is refused.
type hostCheck struct {
	names     map[string]bool
	wildcards []string // ".example.com" of "*.example.com"
}

// newHostCheck returns the check for an API listening on listen.
func newHostCheck(listen string, extra []string) hostCheck {
	h := hostCheck{names: map[string]bool{"localhost": true}}
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" && net.ParseIP(host) == nil {
		h.names[canonicalHost(host)] = true
	}
	if name, err := os.Hostname(); err == nil && name != "" {
		h.names[canonicalHost(name)] = true
	}
	for _, n := range extra {
		n = canonicalHost(n)
		if rest, ok := strings.CutPrefix(n, "*."); ok {
			h.wildcards = append(h.wildcards, "."+rest)
			continue
		}
		h.names[n] = true
	}
	return h
}

// canonicalHost lower-cases a host name and drops a trailing dot.
func canonicalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}

// allows reports whether a request with the Host header hostport is for
// this node.
func (h hostCheck) allows(hostport string) bool {
	host := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		host = hh
	}
	host = canonicalHost(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	switch {
	case host == "":
		return true // HTTP/1.0 without Host: no browser sends that
	case net.ParseIP(host) != nil:
		return true
	case h.names[host] || strings.HasSuffix(host, ".localhost"):
		return true
	}
	for _, w := range h.wildcards {
		if strings.HasSuffix(host, w) {
			return true
		}
	}
	return false
}

// guard refuses, before authentication, a request for another host (421)
// and a cross-origin browser request that changes state (403). It reports
// whether the request may go on.
func (s *Server) guard(w http.ResponseWriter, r *http.Request) bool {
	if !s.hosts.allows(r.Host) {
		writeError(w, http.StatusMisdirectedRequest, fmt.Errorf("this node does not serve the host %q: reach it by its address, "+
			"or name the host in -control-hosts ($%s) (a web page of another name could otherwise use the API by DNS rebinding)", r.Host, EnvHosts))
		return false
	}
	if err := s.csrf.Check(r); err != nil {
		writeError(w, http.StatusForbidden, fmt.Errorf("%s %s from another origin (%s) refused: %w; the console and the CLI are not cross-origin",
			r.Method, r.URL.Path, originOf(r), err))
		return false
	}
	return true
}

// originOf names where a browser request came from, for errors.
func originOf(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" {
		return o
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" {
		return "Sec-Fetch-Site: " + s
	}
	return "unknown origin"
}

// checkJSON answers 415 and returns false when a request with a body does
// not declare it application/json: a browser form or a text/plain fetch,
// which a page of any origin may send without asking, never gets to be
// decoded.
func checkJSON(w http.ResponseWriter, r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		return true
	}
	writeError(w, http.StatusUnsupportedMediaType, fmt.Errorf("%s %s takes a JSON body with Content-Type: application/json (got %q)", r.Method, r.URL.Path, ct))
	return false
}
