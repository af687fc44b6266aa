package control

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/creds"
)

// Security says who may use a node's control API, and how the node
// authenticates itself to the other nodes' APIs (it asks them for their
// status). Every node of a cluster should use the same settings.
//
// Authentication is on when tokens (TokensFile, Tokens) or certificate
// roles (CertRoles) are configured; then every endpoint but /healthz needs
// a credential, and GET endpoints need the read role, changes the admin
// role (see api.Role). Without it the API is open to whoever reaches it,
// which the server allows on a loopback address only, unless Insecure.
type Security struct {
	// TLS serves HTTPS with TLS.CertFile and TLS.KeyFile. TLS.CAFile
	// verifies client certificates (see CertRoles) and the other nodes'
	// certificates when this node asks them for their status. Empty:
	// plain HTTP.
	TLS creds.Config
	// RequireClientCert refuses connections without a client certificate
	// signed by TLS.CAFile (mutual TLS), before any request is read.
	// Otherwise a client certificate is optional and verified if given.
	RequireClientCert bool
	// CertRoles maps the identities of client certificates (see
	// creds.Identity: the certificate's common name) to roles; the
	// identity "*" matches any certificate signed by TLS.CAFile. Needs
	// TLS.CAFile.
	CertRoles map[string]api.Role
	// TokensFile holds bearer tokens, one "role:token" per line (see
	// creds.TokensConfig); it is reread when it changes.
	TokensFile string
	// Tokens holds more tokens in the same format, lines or
	// comma-separated (from $SLUICE_CONTROL_TOKENS, say).
	Tokens string
	// PeerToken is the token this node presents to the other nodes; empty
	// means the first read token, else the first admin token, of its own
	// tokens. With client certificates only, the node presents its
	// certificate (TLS.CertFile), which then needs a role in CertRoles.
	PeerToken string
	// Insecure allows serving without authentication on an address other
	// than loopback, for an API behind a proxy that authenticates.
	Insecure bool
	// Hosts are the host names under which clients reach the API, besides
	// IP addresses, localhost and the host name of its listen address: a
	// request whose Host header names another host is refused (421), so
	// that a web page on a name an attacker rebinds to this address (DNS
	// rebinding) cannot use the API. A name "*.example.com" admits its
	// subdomains.
	Hosts []string
}

// Authenticated reports whether s configures any credential, so that the
// API refuses requests without one.
func (s Security) Authenticated() bool {
	return s.TokensFile != "" || strings.TrimSpace(s.Tokens) != "" || len(s.CertRoles) > 0
}

// Validate checks s without reading its files: every problem names the
// field and the fix.
func (s Security) Validate() error {
	var errs []error
	if s.TLS.Enabled() {
		if s.TLS.CertFile == "" || s.TLS.KeyFile == "" {
			errs = append(errs, errors.New("control: Security.TLS needs CertFile and KeyFile to serve HTTPS (-control-cert, -control-key)"))
		}
	}
	if len(s.CertRoles) > 0 && s.TLS.CAFile == "" {
		errs = append(errs, errors.New("control: Security.CertRoles needs TLS.CAFile to verify client certificates (-control-ca)"))
	}
	if s.RequireClientCert && s.TLS.CAFile == "" {
		errs = append(errs, errors.New("control: Security.RequireClientCert needs TLS.CAFile to verify client certificates (-control-ca)"))
	}
	for id, r := range s.CertRoles {
		if _, err := api.ParseRole(string(r)); err != nil || id == "" {
			errs = append(errs, fmt.Errorf("control: Security.CertRoles: %q → %q: want a certificate name (or *) and the role read or admin", id, r))
		}
	}
	return errors.Join(errs...)
}

// Environment variables read by SecurityFromEnv and written by Environ.
const (
	EnvTokensFile        = "SLUICE_CONTROL_TOKENS_FILE"
	EnvTokens            = "SLUICE_CONTROL_TOKENS"
	EnvPeerToken         = "SLUICE_CONTROL_PEER_TOKEN"
	EnvCert              = "SLUICE_CONTROL_CERT"
	EnvKey               = "SLUICE_CONTROL_KEY"
	EnvCA                = "SLUICE_CONTROL_CA"
	EnvCertRoles         = "SLUICE_CONTROL_CERT_ROLES"
	EnvRequireClientCert = "SLUICE_CONTROL_REQUIRE_CLIENT_CERT"
	EnvInsecure          = "SLUICE_CONTROL_INSECURE"
	EnvHosts             = "SLUICE_CONTROL_HOSTS"
)

// SecurityFromEnv reads the security settings from the SLUICE_CONTROL_*
// variables (getenv nil means none is set): *_TOKENS_FILE, *_TOKENS,
// *_PEER_TOKEN, *_CERT, *_KEY, *_CA, *_CERT_ROLES ("role:name,…"),
// *_REQUIRE_CLIENT_CERT and *_INSECURE (any non-empty value but 0 or
// false) and *_HOSTS (comma-separated names).
func SecurityFromEnv(getenv func(string) string) (Security, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	s := Security{
		TLS:               creds.Config{CAFile: getenv(EnvCA), CertFile: getenv(EnvCert), KeyFile: getenv(EnvKey)},
		TokensFile:        getenv(EnvTokensFile),
		Tokens:            getenv(EnvTokens),
		PeerToken:         getenv(EnvPeerToken),
		RequireClientCert: truthy(getenv(EnvRequireClientCert)),
		Insecure:          truthy(getenv(EnvInsecure)),
		Hosts:             ParseHosts(getenv(EnvHosts)),
	}
	roles, err := ParseCertRoles(getenv(EnvCertRoles))
	if err != nil {
		return Security{}, fmt.Errorf("$%s: %w", EnvCertRoles, err)
	}
	s.CertRoles = roles
	return s, nil
}

// truthy reads a boolean environment variable.
func truthy(v string) bool {
	v = strings.TrimSpace(strings.ToLower(v))
	return v != "" && v != "0" && v != "false" && v != "no"
}

// Environ returns the SLUICE_CONTROL_* variables that make another
// process (a slug a launcher starts) use the same settings, as
// SecurityFromEnv reads them.
func (s Security) Environ() []string {
	var env []string
	add := func(k, v string) {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	add(EnvTokensFile, s.TokensFile)
	add(EnvTokens, oneLine(s.Tokens))
	add(EnvPeerToken, s.PeerToken)
	add(EnvCert, s.TLS.CertFile)
	add(EnvKey, s.TLS.KeyFile)
	add(EnvCA, s.TLS.CAFile)
	add(EnvCertRoles, FormatCertRoles(s.CertRoles))
	if s.RequireClientCert {
		add(EnvRequireClientCert, "1")
	}
	if s.Insecure {
		add(EnvInsecure, "1")
	}
	add(EnvHosts, strings.Join(s.Hosts, ","))
	return env
}

// oneLine writes tokens text as comma-separated entries, without comments.
func oneLine(tokens string) string {
	var out []string
	for _, line := range strings.Split(tokens, "\n") {
		for _, e := range strings.Split(line, ",") {
			if e = strings.TrimSpace(e); e != "" && !strings.HasPrefix(e, "#") {
				out = append(out, e)
			}
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				break
			}
		}
	}
	return strings.Join(out, ",")
}

// ParseHosts parses comma-separated host names, as in -control-hosts.
func ParseHosts(v string) []string {
	var out []string
	for _, h := range strings.Split(v, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, strings.ToLower(h))
		}
	}
	return out
}

// ParseCertRoles parses certificate roles written "role:name,role:name"
// (name * for any certificate of the CA), as in -control-cert-roles.
func ParseCertRoles(s string) (map[string]api.Role, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]api.Role{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		role, name, ok := strings.Cut(part, ":")
		role, name = strings.TrimSpace(role), strings.TrimSpace(name)
		r, err := api.ParseRole(role)
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("certificate roles: %q: want role:name, as in admin:alice,read:*", part)
		case err != nil:
			return nil, fmt.Errorf("certificate roles: %q: %w", part, err)
		}
		if prev, dup := out[name]; dup && prev != r {
			return nil, fmt.Errorf("certificate roles: %q has two roles, %s and %s: give one", name, prev, r)
		}
		out[name] = r
	}
	return out, nil
}

// FormatCertRoles writes roles as ParseCertRoles reads them.
func FormatCertRoles(roles map[string]api.Role) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(roles)) {
		parts = append(parts, string(roles[name])+":"+name)
	}
	return strings.Join(parts, ",")
}

// RegisterFlags defines the -control-* flags on fs, setting s, with the
// SLUICE_CONTROL_* variables (getenv nil: os.Getenv) as defaults. Tokens
// themselves are read from files or the environment only, never from
// flags, which other users can see in the process list.
func (s *Security) RegisterFlags(fs *flag.FlagSet, getenv func(string) string) error {
	env, err := SecurityFromEnv(getenv)
	if err != nil {
		return err
	}
	*s = env
	fs.StringVar(&s.TokensFile, "control-tokens-file", env.TokensFile, "file of control API tokens, one role:token per line (roles read, admin); reloaded on change ($"+EnvTokensFile+"; tokens themselves: $"+EnvTokens+")")
	fs.StringVar(&s.TLS.CertFile, "control-cert", env.TLS.CertFile, "serve the control API over HTTPS with this PEM certificate ($"+EnvCert+")")
	fs.StringVar(&s.TLS.KeyFile, "control-key", env.TLS.KeyFile, "the PEM private key of -control-cert ($"+EnvKey+")")
	fs.StringVar(&s.TLS.CAFile, "control-ca", env.TLS.CAFile, "PEM CA bundle: verifies client certificates and the other nodes' certificates ($"+EnvCA+")")
	fs.Func("control-cert-roles", "roles of client certificates by name, as admin:alice,read:* (* is any certificate of -control-ca) ($"+EnvCertRoles+")",
		func(v string) error {
			roles, err := ParseCertRoles(v)
			s.CertRoles = roles
			return err
		})
	fs.BoolVar(&s.RequireClientCert, "control-require-client-cert", env.RequireClientCert, "refuse connections without a client certificate of -control-ca (mutual TLS) ($"+EnvRequireClientCert+")")
	fs.Func("control-hosts", "host names clients use to reach the control API besides IP addresses and localhost, as sluice.example.com,*.corp.example; a request for another host is refused ($"+EnvHosts+")",
		func(v string) error {
			s.Hosts = ParseHosts(v)
			return nil
		})
	fs.BoolVar(&s.Insecure, "control-insecure", env.Insecure, "allow the control API without authentication on an address other than loopback (behind an authenticating proxy only) ($"+EnvInsecure+")")
	return nil
}
