package creds

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Source is one set of TLS credentials read from files: a CA bundle, and a
// certificate with its key. Its methods are safe for concurrent use; the
// tls.Config values it builds read its current credentials at every
// handshake.
type Source struct {
	cfg Config
	cur atomic.Pointer[material]

	mu         sync.Mutex // serialises reloads; guards lastFailed and w
	lastFailed [sha256.Size]byte
	w          *watcher
	closed     bool
}

// material is one consistent load of the files.
type material struct {
	sum   [sha256.Size]byte // of the files' contents, to tell a change
	roots *x509.CertPool    // nil: no CA bundle (the system's CAs)
	cert  *tls.Certificate  // nil: no certificate
	leaf  *x509.Certificate // cert's leaf
}

// Load reads and checks the files of cfg. Every error names the file: one
// that cannot be read, holds no PEM certificate, a key that does not match
// the certificate, a certificate that expired or is not valid yet.
// Load starts no goroutine; Watch does.
func Load(cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Source{cfg: cfg.withDefaults()}
	m, err := s.read(time.Now())
	if err != nil {
		return nil, err
	}
	s.cur.Store(m)
	s.checkChain(m)
	return s, nil
}

// Config returns the configuration s was loaded with.
func (s *Source) Config() Config { return s.cfg }

// Reload rereads the files now. When their contents did not change it does
// nothing; when the new contents are not valid it keeps the credentials in
// use and returns why.
func (s *Source) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reloadLocked()
}

func (s *Source) reloadLocked() error {
	sum, err := s.sum()
	if err != nil {
		return s.failed(sum, err)
	}
	if sum == s.cur.Load().sum {
		return nil
	}
	m, err := s.read(time.Now())
	if err != nil {
		return s.failed(sum, err)
	}
	s.cur.Store(m)
	s.lastFailed = [sha256.Size]byte{}
	attrs := []any{"ca", s.cfg.CAFile}
	if m.leaf != nil {
		attrs = append(attrs, "certificate", s.cfg.CertFile, "identity", Identity(m.leaf), "expires", m.leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	s.cfg.Logger.Info("creds: reloaded TLS credentials", attrs...)
	s.checkChain(m)
	return nil
}

// failed logs a failed reload once per distinct content and returns err.
func (s *Source) failed(sum [sha256.Size]byte, err error) error {
	if sum != s.lastFailed {
		s.lastFailed = sum
		s.cfg.Logger.Warn("creds: keeping the TLS credentials in use: the changed files are not valid (yet)", "error", err)
	}
	return err
}

// Watch starts reloading the files when they change, until Close. It is
// safe to call twice.
func (s *Source) Watch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("creds: watch %s: the source is closed", s.files())
	}
	if s.w == nil {
		s.w = startWatcher([]string{s.cfg.CAFile, s.cfg.CertFile, s.cfg.KeyFile}, s.cfg.PollInterval, s.cfg.Logger, func() { _ = s.Reload() })
	}
	return nil
}

// Close stops watching and waits for the watcher's goroutine. The tls.Config
// values built by s keep working with the last credentials. It is safe to
// call twice.
func (s *Source) Close() error {
	s.mu.Lock()
	w := s.w
	s.w, s.closed = nil, true
	s.mu.Unlock()
	if w != nil {
		w.stop() // outside the lock: the goroutine may be reloading
	}
	return nil
}

// Leaf returns the current certificate, or nil when none is configured.
func (s *Source) Leaf() *x509.Certificate { return s.cur.Load().leaf }

// HasCA reports whether a CA bundle is configured.
func (s *Source) HasCA() bool { return s.cfg.CAFile != "" }

// files describes the configured files, for errors.
func (s *Source) files() string {
	var out string
	for _, f := range []string{s.cfg.CAFile, s.cfg.CertFile, s.cfg.KeyFile} {
		if f != "" {
			if out != "" {
				out += ", "
			}
			out += f
		}
	}
	return out
}

// sum hashes the files' contents.
func (s *Source) sum() ([sha256.Size]byte, error) {
	h := sha256.New()
	for _, f := range []string{s.cfg.CAFile, s.cfg.CertFile, s.cfg.KeyFile} {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return [sha256.Size]byte{}, fmt.Errorf("%w: %w", ErrBadFile, err)
		}
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	return [sha256.Size]byte(h.Sum(nil)), nil
}

// read loads the files as of now.
func (s *Source) read(now time.Time) (*material, error) {
	m := &material{}
	h := sha256.New()
	readFile := func(what, f string) ([]byte, error) {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadFile, what, err)
		}
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
		return b, nil
	}
	if f := s.cfg.CAFile; f != "" {
		b, err := readFile("CA bundle", f)
		if err != nil {
			return nil, err
		}
		if m.roots, err = parseBundle(f, b); err != nil {
			return nil, err
		}
	}
	if s.cfg.CertFile != "" {
		certPEM, err := readFile("certificate", s.cfg.CertFile)
		if err != nil {
			return nil, err
		}
		keyPEM, err := readFile("private key", s.cfg.KeyFile)
		if err != nil {
			return nil, err
		}
		if !hasBlock(certPEM, "CERTIFICATE") {
			return nil, fmt.Errorf("%w: certificate %s holds no PEM CERTIFICATE block", ErrBadFile, s.cfg.CertFile)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("%w: certificate %s with key %s: %w", ErrBadFile, s.cfg.CertFile, s.cfg.KeyFile, err)
		}
		leaf := cert.Leaf
		if leaf == nil {
			if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
				return nil, fmt.Errorf("%w: certificate %s: %w", ErrBadFile, s.cfg.CertFile, err)
			}
		}
		if err := validAt(leaf, now); err != nil {
			return nil, fmt.Errorf("certificate %s: %w", s.cfg.CertFile, err)
		}
		m.cert, m.leaf = &cert, leaf
		s.checkKeyMode()
	}
	m.sum = [sha256.Size]byte(h.Sum(nil))
	return m, nil
}

// parseBundle reads every certificate of a PEM CA bundle.
func parseBundle(file string, b []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: CA bundle %s: certificate %d: %w", ErrBadFile, file, n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: CA bundle %s holds no PEM CERTIFICATE block", ErrBadFile, file)
	}
	return pool, nil
}

// hasBlock reports whether b holds a PEM block of type typ.
func hasBlock(b []byte, typ string) bool {
	for rest := b; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return false
		}
		if block.Type == typ {
			return true
		}
	}
}

// validAt checks c's validity period at now.
func validAt(c *x509.Certificate, now time.Time) error {
	switch {
	case now.After(c.NotAfter):
		return fmt.Errorf("%w: %q expired at %s (it is now %s); issue a new one", ErrExpired, Identity(c),
			c.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case now.Before(c.NotBefore):
		return fmt.Errorf("%w: %q is valid from %s (it is now %s); check the clocks", ErrNotYetValid, Identity(c),
			c.NotBefore.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkKeyMode warns about a private key others can read.
func (s *Source) checkKeyMode() {
	if fi, err := os.Stat(s.cfg.KeyFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
		s.cfg.Logger.Warn("creds: the private key can be read by other users; chmod 600 it", "file", s.cfg.KeyFile, "mode", fi.Mode().Perm().String())
	}
}

// checkChain warns when the certificate is not signed by the configured
// CA: peers trusting only that CA will refuse it.
func (s *Source) checkChain(m *material) {
	if m.leaf == nil || m.roots == nil {
		return
	}
	inter := x509.NewCertPool()
	for _, der := range m.cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	if _, err := m.leaf.Verify(x509.VerifyOptions{Roots: m.roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		s.cfg.Logger.Warn("creds: this certificate is not signed by the CA bundle; peers that trust only that bundle will refuse it",
			"certificate", s.cfg.CertFile, "ca", s.cfg.CAFile, "error", err)
	}
}
