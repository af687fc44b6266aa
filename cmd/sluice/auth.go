package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/sluicehq/sluice/creds"
)

// credentials are what the global flags give to authenticate to the node:
// a token, and for HTTPS a CA bundle and a client certificate.
type credentials struct {
	token     string
	tokenFrom string // "--token", "--token-file F", "$SLUICE_TOKEN", …
	ca        string
	cert, key string
}

// credentials reads the credential flags and their environment fallbacks.
func (a *app) credentials() (credentials, error) {
	var c credentials
	tokenFile, fileFrom := a.tokenFile, "--token-file"
	switch {
	case a.token != "" && tokenFile != "":
		return c, &usageError{errors.New("--token and --token-file both give a token: give one")}
	case a.token != "":
		c.token, c.tokenFrom = a.token, "--token"
	case tokenFile == "" && a.getenv("SLUICE_TOKEN") != "":
		c.token, c.tokenFrom = a.getenv("SLUICE_TOKEN"), "$SLUICE_TOKEN"
	case tokenFile == "":
		tokenFile, fileFrom = a.getenv("SLUICE_TOKEN_FILE"), "$SLUICE_TOKEN_FILE"
	}
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return c, &usageError{fmt.Errorf("%s: %w", fileFrom, err)}
		}
		t := strings.TrimSpace(string(b))
		if t == "" || strings.ContainsAny(t, ": \t\n") {
			return c, &usageError{fmt.Errorf("%s %s: want a file holding the token alone (not a role:token list)", fileFrom, tokenFile)}
		}
		c.token, c.tokenFrom = t, fileFrom+" "+tokenFile
	}
	c.ca = or(a.ca, a.getenv("SLUICE_CA"))
	c.cert = or(a.cert, a.getenv("SLUICE_CERT"))
	c.key = or(a.key, a.getenv("SLUICE_KEY"))
	if (c.cert == "") != (c.key == "") {
		return c, &usageError{errors.New("--cert and --key go together: give the client certificate and its key")}
	}
	return c, nil
}

// tls reports whether c asks for HTTPS.
func (c credentials) tls() bool { return c.ca != "" || c.cert != "" }

// tlsConfig returns the client TLS configuration for host, or nil for the
// system's defaults.
func (c credentials) tlsConfig(host string) (*tls.Config, error) {
	if !c.tls() {
		return nil, nil
	}
	src, err := creds.Load(creds.Config{CAFile: c.ca, CertFile: c.cert, KeyFile: c.key})
	if err != nil {
		return nil, &usageError{fmt.Errorf("--ca, --cert, --key: %w", err)}
	}
	return src.ClientTLS(host)
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// loopbackHost reports whether a URL host is this machine.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// explainTLS rewrites a TLS failure in terms of the flags.
func (c *client) explainTLS(err error) (string, bool) {
	var ve *creds.VerifyError
	if errors.As(err, &ve) {
		switch {
		case errors.Is(ve.Reason, creds.ErrUnknownAuthority) && c.creds.ca != "":
			return fmt.Sprintf("the node's certificate %q is not signed by --ca %s: give the CA of the node's cluster", ve.Identity, c.creds.ca), true
		case errors.Is(ve.Reason, creds.ErrUnknownAuthority):
			return fmt.Sprintf("the node's certificate %q is not signed by a CA this machine trusts: give the cluster's CA with --ca", ve.Identity), true
		case errors.Is(ve.Reason, creds.ErrExpired), errors.Is(ve.Reason, creds.ErrNotYetValid):
			return fmt.Sprintf("the node's certificate is not valid now (%s): renew it, or check the clocks", ve.Detail), true
		case errors.Is(ve.Reason, creds.ErrNameMismatch):
			return fmt.Sprintf("the node's certificate %q is not valid for %q (%s): use a name or address it names in --addr", ve.Identity, ve.Name, ve.Detail), true
		}
		return ve.Error(), true
	}
	// Without --ca, Go verifies the node against the system's CAs.
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &ua):
		return fmt.Sprintf("the node's certificate %q is not signed by a CA this machine trusts: give the cluster's CA with --ca", creds.Identity(ua.Cert)), true
	case errors.As(err, &he):
		return fmt.Sprintf("the node's certificate %q is not valid for %q: use a name or address it names in --addr", creds.Identity(he.Certificate), he.Host), true
	case errors.As(err, &ci) && ci.Reason == x509.Expired:
		return fmt.Sprintf("the node's certificate %q is not valid now (%v): renew it, or check the clocks", creds.Identity(ci.Cert), ci), true
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return "the node serves plain HTTP, not HTTPS: use an http:// address (and no --ca, --cert)", true
	case strings.Contains(msg, "remote error: tls: certificate required"):
		return "the node requires a client certificate: give --cert and --key", true
	case strings.Contains(msg, "remote error: tls:"):
		what := "a client certificate"
		if c.creds.cert != "" {
			what = "the client certificate --cert " + c.creds.cert
		}
		return fmt.Sprintf("the node refused %s (%s): is it signed by the CA the node trusts, and still valid?", what, msg[strings.Index(msg, "remote error: tls:"):]), true
	}
	return "", false
}

// explainStatus adds what to do to a 401 or 403 answer.
func (c *client) explainStatus(e *apiError, body []byte) {
	switch e.Status {
	case http.StatusUnauthorized:
		if c.creds.token == "" {
			e.Summary = "the node requires authentication"
			e.Hint = "give a token (--token-file, --token or $SLUICE_TOKEN) or a client certificate (--cert, --key)"
		} else {
			e.Hint = "the node refused the token from " + c.creds.tokenFrom
		}
	case http.StatusForbidden:
		if e.Body.Need != "" {
			e.Hint = fmt.Sprintf("this needs a token or certificate with the role %s", e.Body.Need)
		}
	case http.StatusBadRequest:
		if strings.Contains(string(body), "HTTP request to an HTTPS server") {
			e.Hint = "the node serves HTTPS: use an https:// address, with --ca if its CA is not one this machine trusts"
		}
	}
}

// warnPlainToken warns when a token would cross the network in clear.
func (c *client) warnPlainToken(u *url.URL) {
	if c.creds.token != "" && u.Scheme == "http" && !loopbackHost(u.Hostname()) && c.warn != nil {
		fmt.Fprintf(c.warn, "sluice: warning: sending the token from %s over plain HTTP to %s: anyone on the way can read it; use https://\n", c.creds.tokenFrom, u.Host)
		c.warn = nil // once
	}
}
