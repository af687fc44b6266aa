package creds_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/creds"
)

func TestIssueNodeAndClientCertificates(t *testing.T) {
	ca, err := creds.NewCA("dev CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := creds.WriteKeyPair(filepath.Join(dir, "ca.pem"), ca.CertPEM, filepath.Join(dir, "ca-key.pem"), ca.KeyPEM, false); err != nil {
		t.Fatal(err)
	}
	loaded, err := creds.LoadAuthority(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := loaded.Issue(creds.Request{Name: "n1", DNSNames: []string{"n1.example"}, IPs: []net.IP{net.ParseIP("10.0.0.1")},
		Usage: creds.NodeUsage, Valid: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(dir, "n1.pem"), filepath.Join(dir, "n1-key.pem")
	if err := creds.WriteKeyPair(cert, certPEM, key, keyPEM, false); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]os.FileMode{cert: 0o644, key: 0o600, filepath.Join(dir, "ca-key.pem"): 0o600} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", f, fi.Mode().Perm(), err, want)
		}
	}
	src, err := creds.Load(creds.Config{CAFile: filepath.Join(dir, "ca.pem"), CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	leaf := src.Leaf()
	if _, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || leaf.PublicKey.(*ecdsa.PublicKey).Curve != elliptic.P256() {
		t.Errorf("key %T, want ECDSA P-256", leaf.PublicKey)
	}
	if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) || !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Errorf("node certificate usages %v, want server and client authentication", leaf.ExtKeyUsage)
	}
	if creds.Identity(leaf) != "n1" || !slices.Equal(leaf.DNSNames, []string{"n1.example"}) || len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP("10.0.0.1")) {
		t.Errorf("names: CN %q, DNS %v, IPs %v", leaf.Subject.CommonName, leaf.DNSNames, leaf.IPAddresses)
	}
	if d := leaf.NotAfter.Sub(leaf.NotBefore); d != 48*time.Hour {
		t.Errorf("validity %v, want 48h", d)
	}
	if err := creds.WriteKeyPair(cert, certPEM, key, keyPEM, false); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("overwriting without asking: %v, want refused", err)
	}
	clientPEM, _, err := loaded.Issue(creds.Request{Name: "alice", Usage: creds.ClientUsage, Valid: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseCert(clientPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("client certificate usages %v, want client authentication only", c.ExtKeyUsage)
	}
	if _, err := creds.LoadAuthority(cert, key); err == nil || !strings.Contains(err.Error(), "is not a CA certificate") {
		t.Errorf("a node certificate as CA: %v", err)
	}
}
