package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Security says how a connector's clients reach the brokers: over TLS
// (verifying the brokers' certificates, optionally presenting a client
// certificate) and authenticated with SASL. The zero value is plaintext
// without authentication, for development only; see docs/kafka.md
// "Secure setup".
type Security struct {
	// TLS, when set, encrypts every connection and verifies the brokers'
	// certificates.
	TLS *TLS
	// SASL, when set, authenticates every connection.
	SASL *SASL
}

// TLS configures TLS to the brokers. Files are PEM and are read when the
// configuration is validated (to report a bad file at once) and again
// when an instance starts, so a renewed certificate is used from the next
// (re)start of an instance on.
type TLS struct {
	// CAFile holds the certificates of the authorities that sign the
	// brokers' certificates; empty means the system's roots.
	CAFile string
	// CertFile and KeyFile hold the client certificate and its private
	// key, for brokers that require client certificates
	// (ssl.client.auth=required). Give both or neither.
	CertFile, KeyFile string
	// ServerName is the name the brokers' certificates must carry; empty
	// means the host of each broker's address.
	ServerName string
}

// SASL mechanisms.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// SASL configures SASL authentication. Use it with TLS: PLAIN sends the
// password as it is, and neither mechanism encrypts the records.
type SASL struct {
	// Mechanism is SASLPlain, SASLScramSHA256 or SASLScramSHA512 (case
	// does not matter); required.
	Mechanism string
	// User and Password are the credentials; both required.
	User, Password string
}

// ParseSASLMechanism parses a mechanism name as given in flags and
// environment variables ("plain", "scram-sha-256", "SCRAM-SHA-512").
func ParseSASLMechanism(s string) (string, error) {
	switch m := strings.ToUpper(strings.TrimSpace(s)); m {
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		return m, nil
	}
	return "", fmt.Errorf("kafka: unknown SASL mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

// validate checks the settings (and reads the files) and returns a
// ConfigError naming the field at fault, for operator op.
func (s Security) validate(op string) error {
	bad := func(field, format string, args ...any) error {
		return fieldError(op, "Security."+field, format, args...)
	}
	if t := s.TLS; t != nil {
		if _, err := t.Config(); err != nil {
			var fe *fileError
			if errors.As(err, &fe) {
				return bad("TLS."+fe.field, "%v", fe.err)
			}
			return bad("TLS", "%v", err)
		}
	}
	if a := s.SASL; a != nil {
		if _, err := ParseSASLMechanism(a.Mechanism); err != nil {
			return bad("SASL.Mechanism", "%q is not supported: use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", a.Mechanism)
		}
		if a.User == "" {
			return bad("SASL.User", "is required with SASL")
		}
		if a.Password == "" {
			return bad("SASL.Password", "is required with SASL (read it from a secret, not from the source code)")
		}
	}
	return nil
}

// fileError is a TLS file that cannot be used, with the field naming it.
type fileError struct {
	field string
	err   error
}

func (e *fileError) Error() string { return e.field + ": " + e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// Config reads the files and returns the TLS configuration of a client
// (for clients of your own that reach the same brokers). Errors name the
// file and the field.
func (t *TLS) Config() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, &fileError{"CAFile", fmt.Errorf("cannot read the CA certificates: %w", err)}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &fileError{"CAFile", fmt.Errorf("%s holds no PEM certificate", t.CAFile)}
		}
		c.RootCAs = pool
	}
	switch {
	case t.CertFile != "" && t.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, &fileError{"CertFile", fmt.Errorf("cannot load the client certificate and key (%s, %s): %w", t.CertFile, t.KeyFile, err)}
		}
		c.Certificates = []tls.Certificate{cert}
	case t.CertFile != "":
		return nil, &fileError{"KeyFile", errors.New("is required with CertFile: give the client certificate's private key")}
	case t.KeyFile != "":
		return nil, &fileError{"CertFile", errors.New("is required with KeyFile: give the client certificate")}
	}
	return c, nil
}

// clientOptions returns the options every client of a connector starts
// with: the seed brokers, the health hook, and TLS and SASL per sec.
func clientOptions(brokers []string, h *health, sec Security) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.WithHooks(h)}
	if sec.TLS != nil {
		c, err := sec.TLS.Config()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(c))
	}
	if a := sec.SASL; a != nil {
		m, err := ParseSASLMechanism(a.Mechanism)
		if err != nil {
			return nil, err
		}
		var mech sasl.Mechanism
		switch m {
		case SASLPlain:
			mech = plain.Auth{User: a.User, Pass: a.Password}.AsMechanism()
		case SASLScramSHA256:
			mech = scram.Auth{User: a.User, Pass: a.Password}.AsSha256Mechanism()
		case SASLScramSHA512:
			mech = scram.Auth{User: a.User, Pass: a.Password}.AsSha512Mechanism()
		}
		h.sasl = fmt.Sprintf("SASL %s as %q", m, a.User)
		opts = append(opts, kgo.SASL(trackedMechanism{mech, h}))
	}
	return opts, nil
}

// trackedMechanism tells the health hook which connections are in the
// middle of SASL authentication: some brokers (kfake among them) close
// the connection on bad credentials instead of answering
// SASL_AUTHENTICATION_FAILED, and a connection that dies there is, almost
// always, refused credentials.
type trackedMechanism struct {
	sasl.Mechanism
	h *health
}

// Authenticate implements sasl.Mechanism.
func (m trackedMechanism) Authenticate(ctx context.Context, addr string) (sasl.Session, []byte, error) {
	s, first, err := m.Mechanism.Authenticate(ctx, addr)
	if err != nil {
		return nil, nil, err
	}
	m.h.authStarted(addr)
	return trackedSession{s, m.h, addr}, first, nil
}

type trackedSession struct {
	sasl.Session
	h    *health
	addr string
}

// Challenge implements sasl.Session.
func (s trackedSession) Challenge(resp []byte) (bool, []byte, error) {
	done, next, err := s.Session.Challenge(resp)
	if done || err != nil {
		s.h.authEnded(s.addr)
	}
	return done, next, err
}
