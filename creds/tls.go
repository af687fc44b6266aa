package creds

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// ClientAuth says whether a server asks for client certificates.
type ClientAuth int

const (
	// NoClientCert: the server does not ask for a client certificate.
	NoClientCert ClientAuth = iota
	// VerifyClientCertIfGiven: a client may present a certificate (it is
	// then verified against the CA bundle) or none (it authenticates
	// otherwise, with a token say).
	VerifyClientCertIfGiven
	// RequireClientCert: a client must present a certificate signed by a
	// CA of the bundle, or the handshake fails (mutual TLS).
	RequireClientCert
)

// String returns the mode's name.
func (a ClientAuth) String() string {
	switch a {
	case NoClientCert:
		return "none"
	case VerifyClientCertIfGiven:
		return "verify-if-given"
	case RequireClientCert:
		return "require"
	}
	return fmt.Sprintf("ClientAuth(%d)", int(a))
}

// ServerTLS returns a TLS configuration for a server presenting the
// current certificate, asking for client certificates as auth says and
// verifying them against the current CA bundle (for client
// authentication). It fails with ErrNoCertificate when no certificate is
// configured, ErrNoCA when auth needs a CA bundle and none is configured.
//
// Callers may clone the result and add NextProtos (net/http, gRPC do).
// After a handshake, ClientIdentity names the client.
func (s *Source) ServerTLS(auth ClientAuth) (*tls.Config, error) {
	if s.cur.Load().cert == nil {
		return nil, fmt.Errorf("%w: a server needs CertFile and KeyFile", ErrNoCertificate)
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.cur.Load().cert, nil
		},
	}
	switch auth {
	case NoClientCert:
		return cfg, nil
	case VerifyClientCertIfGiven:
		cfg.ClientAuth = tls.RequestClientCert
	case RequireClientCert:
		cfg.ClientAuth = tls.RequireAnyClientCert
	default:
		return nil, fmt.Errorf("creds: unknown client authentication mode %v", auth)
	}
	if s.cur.Load().roots == nil {
		return nil, fmt.Errorf("%w: verifying client certificates needs CAFile", ErrNoCA)
	}
	// The certificate is verified here rather than by crypto/tls (ClientCAs)
	// so that a reloaded CA bundle applies to the next handshake.
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return nil // RequireAnyClientCert has refused this already
		}
		_, err := s.verify(cs.PeerCertificates, "", x509.ExtKeyUsageClientAuth, "client")
		return err
	}
	return cfg, nil
}

// ClientTLS returns a TLS configuration for a client of the server
// serverName (a DNS name or an IP address, as dialled): it verifies that
// the server's certificate is signed by the current CA bundle (the
// system's CAs when none is configured) and valid for serverName, and
// presents the current certificate when one is configured and the server
// asks. A failed verification is a *VerifyError.
func (s *Source) ClientTLS(serverName string) (*tls.Config, error) {
	if serverName == "" {
		return nil, errors.New("creds: ClientTLS needs the server's name or address to verify its certificate against")
	}
	return s.clientTLS(serverName, func(chain []*x509.Certificate) error {
		_, err := s.verify(chain, serverName, x509.ExtKeyUsageServerAuth, "server")
		return err
	}), nil
}

// PeerTLS returns a TLS configuration for a client of another node: it
// verifies that the server's certificate is signed by the current CA
// bundle and that its identity (see Identity) is node, whatever address
// the node was reached at; it presents the current certificate. This is
// "node identity = certificate name": the CA bundle names who is in the
// cluster, the certificate's name which node it is.
func (s *Source) PeerTLS(node string) (*tls.Config, error) {
	if node == "" {
		return nil, errors.New("creds: PeerTLS needs the node's identity")
	}
	if s.cur.Load().roots == nil {
		return nil, fmt.Errorf("%w: verifying other nodes needs CAFile", ErrNoCA)
	}
	return s.clientTLS("", func(chain []*x509.Certificate) error {
		leaf, err := s.verify(chain, "", x509.ExtKeyUsageServerAuth, "server")
		if err != nil {
			return err
		}
		if got := Identity(leaf); got != node {
			return &VerifyError{Peer: "server", Identity: got, CAFile: s.cfg.CAFile, Name: node, Reason: ErrNameMismatch,
				Err: fmt.Errorf("want the certificate of node %q", node), Detail: "its identity is " + strconv.Quote(got)}
		}
		return nil
	}), nil
}

// ClusterTLS returns a TLS configuration for a client of a node whose
// identity is not known in advance (an address not yet in the membership):
// it verifies that the server's certificate is signed by the current CA
// bundle, whatever its identity, and presents the current certificate.
// Prefer PeerTLS when the node is known.
func (s *Source) ClusterTLS() (*tls.Config, error) {
	if s.cur.Load().roots == nil {
		return nil, fmt.Errorf("%w: verifying other nodes needs CAFile", ErrNoCA)
	}
	return s.clientTLS("", func(chain []*x509.Certificate) error {
		_, err := s.verify(chain, "", x509.ExtKeyUsageServerAuth, "server")
		return err
	}), nil
}

// clientTLS builds a client configuration whose server certificate check
// is check.
func (s *Source) clientTLS(serverName string, check func([]*x509.Certificate) error) *tls.Config {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: serverName,
		// crypto/tls would verify against RootCAs fixed in this config; the
		// verification is done by VerifyConnection instead, against the CA
		// bundle current at the handshake, with the same checks (chain,
		// validity, name, extended key usage).
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return ErrNoPeerCertificate
			}
			return check(cs.PeerCertificates)
		},
	}
	if s.cur.Load().cert != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return s.cur.Load().cert, nil
		}
	}
	return cfg
}

// DialTLS returns a function for http.Transport.DialTLSContext: it dials
// with d and runs a TLS handshake as ClientTLS for the host dialled, so
// that one transport reaches many servers, each verified for its own
// name.
func (s *Source) DialTLS(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cfg, err := s.ClientTLS(ServerName(addr))
		if err != nil {
			return nil, err
		}
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := tls.Client(raw, cfg)
		if err := c.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		return c, nil
	}
}

// ClientIdentity verifies the client certificate of a connection accepted
// with ServerTLS against the current CA bundle, and returns its identity.
// It fails with ErrNoPeerCertificate when the client presented none.
func (s *Source) ClientIdentity(cs tls.ConnectionState) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return "", ErrNoPeerCertificate
	}
	leaf, err := s.verify(cs.PeerCertificates, "", x509.ExtKeyUsageClientAuth, "client")
	if err != nil {
		return "", err
	}
	return Identity(leaf), nil
}

// Identity returns the name a certificate identifies: its subject common
// name, else its first DNS name, else "".
func Identity(c *x509.Certificate) string {
	if c == nil {
		return ""
	}
	if c.Subject.CommonName != "" {
		return c.Subject.CommonName
	}
	if len(c.DNSNames) > 0 {
		return c.DNSNames[0]
	}
	return ""
}

// VerifyError is a peer's certificate that failed verification. Reason is
// ErrUnknownAuthority, ErrExpired, ErrNotYetValid, ErrNameMismatch,
// ErrUsage or ErrUntrusted, for errors.Is; Err is the x509 error.
type VerifyError struct {
	// Peer is "server" or "client": who presented the certificate.
	Peer string
	// Identity is the certificate's (see Identity).
	Identity string
	// CAFile is the CA bundle it was verified against ("" for the
	// system's CAs).
	CAFile string
	// Name is the name or address dialled (servers only).
	Name   string
	Reason error
	Err    error
	// Detail adds the specifics (the validity period, the names the
	// certificate is valid for).
	Detail string
}

// Error says what was wrong and against which file.
func (e *VerifyError) Error() string {
	who := fmt.Sprintf("the %s's certificate %q", e.Peer, e.Identity)
	var msg string
	switch {
	case errors.Is(e.Reason, ErrUnknownAuthority):
		if e.CAFile == "" {
			msg = who + " is not signed by a CA this system trusts; give the CA bundle that signed it"
		} else {
			msg = fmt.Sprintf("%s is not signed by a CA in %s", who, e.CAFile)
		}
	case errors.Is(e.Reason, ErrExpired):
		msg = who + " has expired"
	case errors.Is(e.Reason, ErrNotYetValid):
		msg = who + " is not valid yet"
	case errors.Is(e.Reason, ErrNameMismatch):
		msg = fmt.Sprintf("%s is not valid for %q", who, e.Name)
	case errors.Is(e.Reason, ErrUsage):
		msg = fmt.Sprintf("%s may not be used by a %s (extended key usage)", who, e.Peer)
	default:
		msg = who + " failed verification"
	}
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return "creds: " + msg + ": " + e.Err.Error()
}

// Unwrap returns Reason and the x509 error.
func (e *VerifyError) Unwrap() []error { return []error{e.Reason, e.Err} }

// verify checks a peer's chain (leaf first) against the current CA bundle
// for usage, and for name when it is not empty, and returns the leaf.
func (s *Source) verify(chain []*x509.Certificate, name string, usage x509.ExtKeyUsage, peer string) (*x509.Certificate, error) {
	leaf := chain[0]
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	now := time.Now()
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots:         s.cur.Load().roots,
		Intermediates: inter,
		DNSName:       name,
		KeyUsages:     []x509.ExtKeyUsage{usage},
		CurrentTime:   now,
	})
	if err == nil {
		return leaf, nil
	}
	ve := &VerifyError{Peer: peer, Identity: Identity(leaf), CAFile: s.cfg.CAFile, Name: name, Err: err}
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &ua):
		ve.Reason = ErrUnknownAuthority
	case errors.As(err, &he):
		ve.Reason = ErrNameMismatch
		ve.Detail = "it is valid for " + validNames(leaf)
	case errors.As(err, &ci) && ci.Reason == x509.Expired:
		c := ci.Cert
		if c == nil {
			c = leaf
		}
		ve.Reason = ErrExpired
		if now.Before(c.NotBefore) {
			ve.Reason = ErrNotYetValid
		}
		ve.Detail = fmt.Sprintf("%q is valid from %s to %s, it is now %s", Identity(c), c.NotBefore.UTC().Format(time.RFC3339),
			c.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case errors.As(err, &ci) && ci.Reason == x509.IncompatibleUsage:
		ve.Reason = ErrUsage
	default:
		ve.Reason = ErrUntrusted
	}
	return nil, ve
}

// validNames lists the DNS names and addresses a certificate is valid for.
func validNames(c *x509.Certificate) string {
	var names []string
	names = append(names, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		return "no name (it has no DNS or IP subject alternative names)"
	}
	return strings.Join(names, ", ")
}

// ServerName returns the host of a host:port address, as a client sets
// tls.Config.ServerName for it.
func ServerName(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
