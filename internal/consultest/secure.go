package consultest

import (
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/creds"
)

// Options are the optional security features of an agent started by
// StartWith. The zero value is what Start runs: plain HTTP, no ACLs.
type Options struct {
	// ACL enables ACLs with default_policy "deny": a request without a
	// token, or with a token whose policies do not allow it, is refused
	// (403 "Permission denied"). The agent's initial management token
	// (acl.tokens.initial_management, which Consul 1.11+ calls what older
	// versions called acl.tokens.master) is generated and available from
	// ManagementToken; Client uses it, and so does the agent itself
	// (acl.tokens.agent) to register its node.
	ACL bool
	// TLS serves the HTTP API over HTTPS only (ports.http = -1), with a
	// server certificate for 127.0.0.1 and localhost issued by a CA made
	// with the creds package, and tls.https.verify_incoming: every client
	// must present a certificate of that CA. TLS returns the CA bundle and
	// a client certificate; Client and URL use HTTPS.
	TLS bool
}

// TLSFiles are the PEM files of the CA of an agent started with
// Options.TLS and of a client certificate it accepts.
type TLSFiles struct {
	CA         string // CA bundle: CONSUL_CACERT
	ClientCert string // CONSUL_CLIENT_CERT
	ClientKey  string // CONSUL_CLIENT_KEY
}

// ManagementToken returns the agent's initial management token (all
// permissions); "" unless it was started with Options.ACL.
func (a *Agent) ManagementToken() string { return a.mgmtToken }

// TLS returns the CA and client certificate files of an agent started
// with Options.TLS; the zero TLSFiles otherwise.
func (a *Agent) TLS() TLSFiles { return a.tlsFiles }

// URL returns the agent's HTTP API as a URL: "http://127.0.0.1:port", or
// "https://127.0.0.1:port" with Options.TLS. Consul clients accept it as
// their address (CONSUL_HTTP_ADDR).
func (a *Agent) URL() string {
	if a.opts.TLS {
		return "https://" + a.Addr()
	}
	return "http://" + a.Addr()
}

// Env returns the CONSUL_* environment variables under which a client
// using api.DefaultConfig reaches the agent: CONSUL_HTTP_ADDR (URL), and
// with Options.TLS CONSUL_CACERT, CONSUL_CLIENT_CERT and
// CONSUL_CLIENT_KEY. No token: callers add CONSUL_HTTP_TOKEN with the
// token they mean to test.
func (a *Agent) Env() []string {
	env := []string{"CONSUL_HTTP_ADDR=" + a.URL()}
	if a.opts.TLS {
		env = append(env, "CONSUL_CACERT="+a.tlsFiles.CA, "CONSUL_CLIENT_CERT="+a.tlsFiles.ClientCert, "CONSUL_CLIENT_KEY="+a.tlsFiles.ClientKey)
	}
	return env
}

// apiConfig is a client configuration for the agent with the management
// token and TLS files (if any) and the given HTTP client timeout (0:
// none).
func (a *Agent) apiConfig(timeout time.Duration) (*api.Config, error) {
	cfg := &api.Config{Address: a.Addr(), Scheme: "http", Token: a.mgmtToken}
	if a.opts.TLS {
		cfg.Scheme = "https"
		cfg.TLSConfig = api.TLSConfig{CAFile: a.tlsFiles.CA, CertFile: a.tlsFiles.ClientCert, KeyFile: a.tlsFiles.ClientKey}
	}
	// api.NewHttpClient leaves a transport's TLSClientConfig alone when it
	// is set, which a clone of http.DefaultTransport's may be: set it here.
	tlsCfg, err := api.SetupTLSConfig(&cfg.TLSConfig)
	if err != nil {
		return nil, fmt.Errorf("tls config: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	cfg.HttpClient = &http.Client{Transport: tr, Timeout: timeout}
	return cfg, nil
}

// prepareSecurity makes the management token and the certificates that
// Options ask for, once per Agent (they survive Restart).
func (a *Agent) prepareSecurity() error {
	if a.opts.ACL {
		tok, err := uuid()
		if err != nil {
			return fmt.Errorf("management token: %w", err)
		}
		a.mgmtToken = tok
	}
	if !a.opts.TLS {
		return nil
	}
	ca, err := creds.NewCA("consultest-ca", 24*time.Hour)
	if err != nil {
		return err
	}
	dir := filepath.Join(a.dir, "tls")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("tls dir: %w", err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := creds.WriteKeyPair(caFile, ca.CertPEM, filepath.Join(dir, "ca-key.pem"), ca.KeyPEM, false); err != nil {
		return fmt.Errorf("write CA: %w", err)
	}
	issue := func(name string, req creds.Request) (cert, key string, err error) {
		req.Name, req.Valid = name, 24*time.Hour
		c, k, err := ca.Issue(req)
		if err != nil {
			return "", "", fmt.Errorf("issue %s certificate: %w", name, err)
		}
		cert, key = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		if err := creds.WriteKeyPair(cert, c, key, k, false); err != nil {
			return "", "", fmt.Errorf("write %s certificate: %w", name, err)
		}
		return cert, key, nil
	}
	a.serverCert, a.serverKey, err = issue("consul-agent", creds.Request{
		DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usage: creds.NodeUsage})
	if err != nil {
		return err
	}
	a.tlsFiles.CA = caFile
	a.tlsFiles.ClientCert, a.tlsFiles.ClientKey, err = issue("consul-client", creds.Request{Usage: creds.ClientUsage})
	return err
}

// securityConfig is the HCL for Options: ACLs and HTTPS.
func (a *Agent) securityConfig() string {
	s := ""
	if a.opts.ACL {
		s += fmt.Sprintf(`
acl {
  enabled                  = true
  default_policy           = "deny"
  enable_token_persistence = false
  tokens {
    initial_management = %q
    agent              = %q
  }
}
`, a.mgmtToken, a.mgmtToken)
	}
	if a.opts.TLS {
		s += fmt.Sprintf(`
tls {
  defaults {
    ca_file   = %q
    cert_file = %q
    key_file  = %q
  }
  https {
    verify_incoming = true
  }
}
`, a.tlsFiles.CA, a.serverCert, a.serverKey)
	}
	return s
}

// uuid returns a random (version 4) UUID, the form of Consul token
// secrets.
func uuid() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

// NewToken creates, with the management token, an ACL policy named name
// holding rules (HCL, e.g. `key_prefix "sluice/" { policy = "write" }`)
// and a token with only that policy, and returns the token's SecretID. An
// empty rules makes a token without any policy. The agent must have been
// started with Options.ACL.
func (a *Agent) NewToken(name, rules string) string {
	a.t.Helper()
	if !a.opts.ACL {
		a.t.Fatalf("consultest: NewToken %q: the agent was started without Options.ACL", name)
	}
	tok := &api.ACLToken{Description: "consultest " + name}
	if rules != "" {
		p, _, err := a.client.ACL().PolicyCreate(&api.ACLPolicy{Name: name, Rules: rules}, nil)
		if err != nil {
			a.t.Fatalf("consultest: create ACL policy %q: %v", name, err)
		}
		tok.Policies = []*api.ACLTokenPolicyLink{{ID: p.ID}}
	}
	created, _, err := a.client.ACL().TokenCreate(tok, nil)
	if err != nil {
		a.t.Fatalf("consultest: create ACL token %q: %v", name, err)
	}
	return created.SecretID
}
