package creds_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/internal/sluicetest"
)

// server is a TLS server for tests: it answers each connection with the
// client's identity (or "-" without a client certificate) and records
// each handshake error.
type server struct {
	addr string
	errs chan error
}

func serve(t *testing.T, src *creds.Source, auth creds.ClientAuth) *server {
	t.Helper()
	cfg, err := src.ServerTLS(auth)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: l.Addr().String(), errs: make(chan error, 100)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				tc := c.(*tls.Conn)
				if err := tc.Handshake(); err != nil {
					select {
					case s.errs <- err:
					default:
					}
					return
				}
				id := "-"
				if len(tc.ConnectionState().PeerCertificates) > 0 {
					if id, err = src.ClientIdentity(tc.ConnectionState()); err != nil {
						id = "error: " + err.Error()
					}
				}
				_, _ = io.WriteString(c, id)
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	return s
}

// dial connects to addr with the client side of src and returns what the
// server answered and the server's certificate identity.
func dial(src *creds.Source, addr string) (answer, server string, err error) {
	cfg, err := src.ClientTLS("127.0.0.1")
	if err != nil {
		return "", "", err
	}
	return dialWith(cfg, addr)
}

func dialWith(cfg *tls.Config, addr string) (answer, server string, err error) {
	d := &net.Dialer{Timeout: 10 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c) // with TLS 1.3 a refused client certificate shows here
	if err != nil {
		return "", "", err
	}
	return string(b), creds.Identity(c.ConnectionState().PeerCertificates[0]), nil
}

func load(t *testing.T, cfg creds.Config) *creds.Source {
	t.Helper()
	cfg.Logger = sluicetest.Logger(t)
	src, err := creds.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	return src
}

func TestMutualTLSNamesTheClient(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	srv := serve(t, load(t, ca.Node(t, "n1").Config()), creds.RequireClientCert)
	answer, server, err := dial(load(t, ca.Client(t, "alice").Config()), srv.addr)
	if err != nil || answer != "alice" || server != "n1" {
		t.Fatalf("got answer %q from %q, %v; want alice from n1", answer, server, err)
	}
	// A node's certificate is a client certificate too.
	if answer, _, err := dial(load(t, ca.Node(t, "n2").Config()), srv.addr); err != nil || answer != "n2" {
		t.Fatalf("node n2 as a client: got %q, %v; want n2", answer, err)
	}
}

func TestClientCertificateRequired(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	srv := serve(t, load(t, ca.Node(t, "n1").Config()), creds.RequireClientCert)
	noCert := load(t, creds.Config{CAFile: ca.CertFile})
	if answer, _, err := dial(noCert, srv.addr); err == nil {
		t.Fatalf("a client without a certificate got %q, want the handshake refused", answer)
	}
	// Optional client certificates: none is fine, a bad one is not.
	opt := serve(t, load(t, ca.Node(t, "n1").Config()), creds.VerifyClientCertIfGiven)
	if answer, _, err := dial(noCert, opt.addr); err != nil || answer != "-" {
		t.Fatalf("optional client certificate, none given: got %q, %v; want -", answer, err)
	}
	stranger := credstest.NewCA(t, "stranger CA")
	if answer, _, err := dial(load(t, creds.Config{CAFile: ca.CertFile, CertFile: stranger.Client(t, "mallory").Cert, KeyFile: stranger.Client(t, "mallory").Key}), opt.addr); err == nil {
		t.Fatalf("a client certificate from another CA got %q, want it refused", answer)
	}
	select {
	case err := <-opt.errs:
		var ve *creds.VerifyError
		if !errors.As(err, &ve) || !errors.Is(err, creds.ErrUnknownAuthority) || ve.Identity != "mallory" || !strings.Contains(err.Error(), ca.CertFile) {
			t.Fatalf("server's error %v, want a VerifyError: mallory is not signed by a CA in %s", err, ca.CertFile)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server reported no handshake error")
	}
}

func TestServerVerificationErrorsSayWhy(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	other := credstest.NewCA(t, "other CA")
	srv := serve(t, load(t, ca.Node(t, "n1").Config()), creds.NoClientCert)

	// Signed by another CA than the client's bundle.
	_, _, err := dial(load(t, creds.Config{CAFile: other.CertFile}), srv.addr)
	var ve *creds.VerifyError
	if !errors.As(err, &ve) || !errors.Is(err, creds.ErrUnknownAuthority) || ve.Peer != "server" || ve.Identity != "n1" {
		t.Fatalf("wrong CA: %v, want a VerifyError with ErrUnknownAuthority for server n1", err)
	}
	if want := `the server's certificate "n1" is not signed by a CA in ` + other.CertFile; !strings.Contains(err.Error(), want) {
		t.Fatalf("wrong CA: %q, want it to say %q", err, want)
	}

	// Not valid for the name dialled.
	cfg, _ := load(t, creds.Config{CAFile: ca.CertFile}).ClientTLS("n9.example")
	if _, _, err := dialWith(cfg, srv.addr); !errors.Is(err, creds.ErrNameMismatch) || !strings.Contains(err.Error(), "localhost, 127.0.0.1") {
		t.Fatalf("wrong name: %v, want ErrNameMismatch listing the names it is valid for", err)
	}

	// Expired: served by a plain crypto/tls server, since Load refuses it.
	expired := ca.Issue(t, creds.Request{Name: "old", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usage: creds.NodeUsage,
		NotBefore: time.Now().Add(-3 * time.Hour), Valid: time.Hour})
	pair, err := tls.LoadX509KeyPair(expired.Cert, expired.Key)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	if _, _, err := dial(load(t, creds.Config{CAFile: ca.CertFile}), l.Addr().String()); !errors.Is(err, creds.ErrExpired) || !strings.Contains(err.Error(), `"old" has expired`) {
		t.Fatalf("expired: %v, want ErrExpired naming old", err)
	}
}

func TestLoadErrorsNameTheFile(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	n1 := ca.Node(t, "n1")
	n2 := ca.Node(t, "n2")
	expired := ca.Issue(t, creds.Request{Name: "old", Usage: creds.NodeUsage, NotBefore: time.Now().Add(-3 * time.Hour), Valid: time.Hour})
	future := ca.Issue(t, creds.Request{Name: "future", Usage: creds.NodeUsage, NotBefore: time.Now().Add(time.Hour), Valid: time.Hour})
	garbage := ca.Dir + "/garbage.pem"
	if err := os.WriteFile(garbage, []byte("not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  creds.Config
		is   error
		want []string
	}{
		{"missing CA bundle", creds.Config{CAFile: ca.Dir + "/nope.pem"}, creds.ErrBadFile, []string{"CA bundle", ca.Dir + "/nope.pem", "no such file"}},
		{"unreadable CA bundle (a directory)", creds.Config{CAFile: ca.Dir}, creds.ErrBadFile, []string{"CA bundle", ca.Dir, "is a directory"}},
		{"CA bundle without certificates", creds.Config{CAFile: garbage}, creds.ErrBadFile, []string{garbage, "holds no PEM CERTIFICATE"}},
		{"key of another certificate", creds.Config{CertFile: n1.Cert, KeyFile: n2.Key}, creds.ErrBadFile, []string{n1.Cert, n2.Key, "does not match"}},
		{"missing key", creds.Config{CertFile: n1.Cert, KeyFile: ca.Dir + "/nope-key.pem"}, creds.ErrBadFile, []string{"private key", "nope-key.pem"}},
		{"expired certificate", creds.Config{CertFile: expired.Cert, KeyFile: expired.Key}, creds.ErrExpired, []string{expired.Cert, `"old" expired at`}},
		{"certificate not valid yet", creds.Config{CertFile: future.Cert, KeyFile: future.Key}, creds.ErrNotYetValid, []string{future.Cert, "check the clocks"}},
		{"certificate without key", creds.Config{CertFile: n1.Cert}, nil, []string{"CertFile and KeyFile go together"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := creds.Load(tc.cfg)
			if err == nil {
				t.Fatal("loaded, want an error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("got %v, want errors.Is %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestCertificateRotatesWithoutRestart replaces the server's certificate
// and CA files while it serves: new connections get the new certificate,
// and client certificates are verified against the new CA.
func TestCertificateRotatesWithoutRestart(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	files := ca.Node(t, "n1")
	files.CA = filepath.Join(t.TempDir(), "server-ca.pem") // the server's own copy, replaced below
	replace(t, ca.CertFile, files.CA)
	src := load(t, files.Config())
	if err := src.Watch(); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, src, creds.VerifyClientCertIfGiven)
	client := load(t, creds.Config{CAFile: ca.CertFile})
	if _, server, err := dial(client, srv.addr); err != nil || server != "n1" {
		t.Fatalf("before: server %q, %v", server, err)
	}

	// A new certificate (another name) in the same files.
	newer := ca.Issue(t, creds.Request{Name: "n1-rotated", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usage: creds.NodeUsage, Valid: time.Hour})
	replace(t, newer.Cert, files.Cert)
	replace(t, newer.Key, files.Key)
	sluicetest.WaitFor(t, 10*time.Second, "the server to present the new certificate", func() bool {
		_, server, err := dial(client, srv.addr)
		return err == nil && server == "n1-rotated"
	})

	// A new CA: client certificates of the old one are refused from now on.
	ca2 := credstest.NewCA(t, "cluster CA 2")
	oldClient := load(t, creds.Config{CAFile: ca.CertFile, CertFile: ca.Client(t, "alice").Cert, KeyFile: ca.Client(t, "alice").Key})
	if answer, _, err := dial(oldClient, srv.addr); err != nil || answer != "alice" {
		t.Fatalf("before the CA change: %q, %v; want alice", answer, err)
	}
	replace(t, ca2.CertFile, files.CA)
	sluicetest.WaitFor(t, 10*time.Second, "the old CA's client certificate to be refused", func() bool {
		_, _, err := dial(oldClient, srv.addr)
		return err != nil
	})
	bob := ca2.Client(t, "bob")
	if answer, _, err := dial(load(t, creds.Config{CAFile: ca.CertFile, CertFile: bob.Cert, KeyFile: bob.Key}), srv.addr); err != nil || answer != "bob" {
		t.Fatalf("client of the new CA: %q, %v; want bob", answer, err)
	}
}

// TestBadReloadKeepsTheCredentials writes a certificate without its key:
// the reload fails, naming the files, and the server keeps serving.
func TestBadReloadKeepsTheCredentials(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	files := ca.Node(t, "n1")
	src := load(t, files.Config())
	srv := serve(t, src, creds.NoClientCert)
	other := ca.Node(t, "n2")
	replace(t, other.Cert, files.Cert) // the key is still n1's
	err := src.Reload()
	if !errors.Is(err, creds.ErrBadFile) || !strings.Contains(err.Error(), files.Cert) {
		t.Fatalf("reload: %v, want ErrBadFile naming %s", err, files.Cert)
	}
	if _, server, err := dial(load(t, creds.Config{CAFile: ca.CertFile}), srv.addr); err != nil || server != "n1" {
		t.Fatalf("after a bad reload: server %q, %v; want n1 still", server, err)
	}
	replace(t, other.Key, files.Key)
	if err := src.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := creds.Identity(src.Leaf()); got != "n2" {
		t.Fatalf("after the key arrived: %q, want n2", got)
	}
}

// replace copies src over dst by renaming a temporary file, as tools that
// rotate certificates do.
func replace(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

func TestIdentity(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	if got := creds.Identity(ca.Cert); got != "cluster CA" {
		t.Fatalf("CN: got %q", got)
	}
	src := load(t, ca.Node(t, "n7").Config())
	if got := creds.Identity(src.Leaf()); got != "n7" {
		t.Fatalf("got %q, want n7", got)
	}
	leaf := *src.Leaf()
	leaf.Subject.CommonName = ""
	if got := creds.Identity(&leaf); got != "localhost" {
		t.Fatalf("without a CN: got %q, want the first DNS name", got)
	}
	if got := creds.Identity(nil); got != "" {
		t.Fatalf("nil: %q", got)
	}
}

func TestServerNeedsACertificateAndACAForClients(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	if _, err := load(t, creds.Config{CAFile: ca.CertFile}).ServerTLS(creds.NoClientCert); !errors.Is(err, creds.ErrNoCertificate) {
		t.Fatalf("got %v, want ErrNoCertificate", err)
	}
	n1 := ca.Node(t, "n1")
	if _, err := load(t, creds.Config{CertFile: n1.Cert, KeyFile: n1.Key}).ServerTLS(creds.RequireClientCert); !errors.Is(err, creds.ErrNoCA) {
		t.Fatalf("got %v, want ErrNoCA", err)
	}
}

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil {
		return nil, errors.New("no PEM block")
	}
	return x509.ParseCertificate(b.Bytes)
}

// TestPeerTLSChecksTheNodeName verifies a node by its certificate's name,
// whatever address it is reached at.
func TestPeerTLSChecksTheNodeName(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	srv := serve(t, load(t, ca.Issue(t, creds.Request{Name: "n2", Usage: creds.NodeUsage, Valid: time.Hour}).Config()), creds.RequireClientCert)
	me := load(t, ca.Node(t, "n1").Config())
	cfg, err := me.PeerTLS("n2")
	if err != nil {
		t.Fatal(err)
	}
	if answer, server, err := dialWith(cfg, srv.addr); err != nil || answer != "n1" || server != "n2" {
		t.Fatalf("n1 → n2: %q from %q, %v", answer, server, err)
	}
	cfg, _ = me.PeerTLS("n3")
	if _, _, err := dialWith(cfg, srv.addr); !errors.Is(err, creds.ErrNameMismatch) || !strings.Contains(err.Error(), `want the certificate of node "n3"`) {
		t.Fatalf("n2 posing as n3: %v, want ErrNameMismatch", err)
	}
}

// TestClusterTLSTakesAnyNodeOfTheCA accepts a server of the CA whatever
// its name, and refuses one of another CA.
func TestClusterTLSTakesAnyNodeOfTheCA(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	srv := serve(t, load(t, ca.Issue(t, creds.Request{Name: "n2", Usage: creds.NodeUsage, Valid: time.Hour}).Config()), creds.RequireClientCert)
	me := load(t, ca.Node(t, "n1").Config())
	cfg, err := me.ClusterTLS()
	if err != nil {
		t.Fatal(err)
	}
	if answer, server, err := dialWith(cfg, srv.addr); err != nil || answer != "n1" || server != "n2" {
		t.Fatalf("n1 → n2: %q from %q, %v", answer, server, err)
	}
	other := credstest.NewCA(t, "other CA")
	stranger := serve(t, load(t, other.Node(t, "n2").Config()), creds.RequireClientCert)
	if _, _, err := dialWith(cfg, stranger.addr); !errors.Is(err, creds.ErrUnknownAuthority) {
		t.Fatalf("a server of another CA: %v, want ErrUnknownAuthority", err)
	}
	if _, err := load(t, ca.Node(t, "n3").Config()).ClusterTLS(); err != nil {
		t.Fatal(err)
	}
	n4 := ca.Node(t, "n4")
	if _, err := load(t, creds.Config{CertFile: n4.Cert, KeyFile: n4.Key}).ClusterTLS(); !errors.Is(err, creds.ErrNoCA) {
		t.Fatalf("no CA: %v, want ErrNoCA", err)
	}
}
