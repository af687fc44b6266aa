// Package credstest makes certificates and token files for tests: a CA in
// a temporary directory and node or client certificates signed by it, as
// "sluice certs" makes them. It is not for production code.
package credstest

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/creds"
)

// CA is a test certificate authority whose files live in a test's
// temporary directory.
type CA struct {
	*creds.Authority
	// Dir holds the CA's files and those of the certificates it issues.
	Dir string
	// CertFile is the CA's certificate: the CA bundle peers verify with.
	CertFile string
}

// Files are the files of one issued certificate, with its CA's bundle.
type Files struct {
	CA, Cert, Key string
}

// Config returns the creds configuration of f.
func (f Files) Config() creds.Config {
	return creds.Config{CAFile: f.CA, CertFile: f.Cert, KeyFile: f.Key}
}

// NewCA makes a CA named name in a new temporary directory.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	a, err := creds.NewCA(name, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := &CA{Authority: a, Dir: dir, CertFile: filepath.Join(dir, "ca.pem")}
	if err := creds.WriteKeyPair(ca.CertFile, a.CertPEM, filepath.Join(dir, "ca-key.pem"), a.KeyPEM, false); err != nil {
		t.Fatal(err)
	}
	return ca
}

// Node issues a node certificate named name, valid for localhost and
// 127.0.0.1, and writes it as name.pem and name-key.pem.
func (ca *CA) Node(t testing.TB, name string) Files {
	t.Helper()
	return ca.Issue(t, creds.Request{Name: name, DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
		Usage: creds.NodeUsage, Valid: time.Hour})
}

// Client issues a client certificate named name.
func (ca *CA) Client(t testing.TB, name string) Files {
	t.Helper()
	return ca.Issue(t, creds.Request{Name: name, Usage: creds.ClientUsage, Valid: time.Hour})
}

// Issue issues req and writes it as <Name>.pem and <Name>-key.pem in the
// CA's directory, replacing earlier files of that name.
func (ca *CA) Issue(t testing.TB, req creds.Request) Files {
	t.Helper()
	certPEM, keyPEM, err := ca.Authority.Issue(req)
	if err != nil {
		t.Fatal(err)
	}
	f := Files{CA: ca.CertFile, Cert: filepath.Join(ca.Dir, req.Name+".pem"), Key: filepath.Join(ca.Dir, req.Name+"-key.pem")}
	if err := creds.WriteKeyPair(f.Cert, certPEM, f.Key, keyPEM, true); err != nil {
		t.Fatal(err)
	}
	return f
}

// TokenFile writes lines ("role:token") to a new file, mode 0600, and
// returns its path.
func TokenFile(t testing.TB, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
