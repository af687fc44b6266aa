package main

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk/node"
)

const (
	cliAdminToken = "cli-admin-0123456789abcdef0123"
	cliReadToken  = "cli-read-0123456789abcdef01234"
)

// startSecureNode runs an embedded node (gen, count deployed) with sec on
// its control API and returns its address.
func startSecureNode(t *testing.T, sec control.Security) string {
	t.Helper()
	rt, err := node.Start(context.Background(), node.Config{
		NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0",
		Deploy: []string{"count"}, ControlSecurity: &sec}, testkinds.Gen(0, 100, 0, 1), testkinds.CounterFactory(2, false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	return rt.HTTPAddr()
}

func tempFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCLITokensAndRoles(t *testing.T) {
	addr := startSecureNode(t, control.Security{TokensFile: credstest.TokenFile(t, "admin:"+cliAdminToken, "read:"+cliReadToken)})
	readFile := tempFile(t, cliReadToken+"\n")
	for _, tc := range []struct {
		name   string
		env    map[string]string
		args   []string
		code   int
		stderr string
	}{
		{"no token", nil, []string{"ls"}, exitError,
			"sluice: the node requires authentication: give a token (--token-file, --token or $SLUICE_TOKEN) or a client certificate (--cert, --key)\n"},
		{"unknown token", nil, []string{"--token", "not-the-token-0123456789", "ls"}, exitError,
			"sluice: the token is not valid on this node (unknown or revoked): the node refused the token from --token\n"},
		{"read token reads", nil, []string{"--token-file", readFile, "ls"}, exitOK, ""},
		{"read token from the environment", map[string]string{"SLUICE_TOKEN_FILE": readFile}, []string{"describe", "count"}, exitOK, ""},
		{"read token cannot scale", nil, []string{"--token-file", readFile, "scale", "count", "3"}, exitError,
			"sluice: scale count: token " + creds.Fingerprint(cliReadToken) + " has the role read; PUT /v1/operators/count/instances needs the role admin: this needs a token or certificate with the role admin\n"},
		{"admin token scales", map[string]string{"SLUICE_TOKEN": cliAdminToken}, []string{"scale", "count", "3"}, exitOK, ""},
		{"both flags", nil, []string{"--token", "x", "--token-file", readFile, "ls"}, exitUsage, "sluice: --token and --token-file both give a token: give one\n"},
		{"a role:token file", nil, []string{"--token-file", tempFile(t, "read:"+cliReadToken), "ls"}, exitUsage, "want a file holding the token alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runWith(t, nil, tc.env, append([]string{"--addr", addr}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) || tc.stderr == "" && stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s\nstdout:\n%s\nwant exit %d, stderr containing:\n%s", code, stderr, stdout, tc.code, tc.stderr)
			}
		})
	}
}

func TestCLIOverTLS(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	alice, bob := ca.Client(t, "alice"), ca.Client(t, "bob")
	addr := startSecureNode(t, control.Security{TLS: ca.Node(t, "n1").Config(), CertRoles: map[string]api.Role{"alice": api.RoleAdmin}})
	other := credstest.NewCA(t, "other CA")
	elsewhere := startSecureNode(t, control.Security{TLS: ca.Issue(t, creds.Request{Name: "n3", DNSNames: []string{"n3.example"}, Usage: creds.NodeUsage, Valid: time.Hour}).Config(),
		CertRoles: map[string]api.Role{"*": api.RoleRead}})
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"client certificate, https implied by --ca", []string{"--addr", addr, "--ca", ca.CertFile, "--cert", alice.Cert, "--key", alice.Key, "scale", "count", "4"}, exitOK, ""},
		{"wrong CA", []string{"--addr", addr, "--ca", other.CertFile, "ls"}, exitError,
			`the node's certificate "n1" is not signed by --ca ` + other.CertFile + ": give the CA of the node's cluster"},
		{"no CA", []string{"--addr", "https://" + addr, "ls"}, exitError,
			`the node's certificate "n1" is not signed by a CA this machine trusts: give the cluster's CA with --ca`},
		{"not the name dialled", []string{"--addr", elsewhere, "--ca", ca.CertFile, "ls"}, exitError,
			`the node's certificate "n3" is not valid for "127.0.0.1" (it is valid for n3.example): use a name or address it names in --addr`},
		{"certificate without a role", []string{"--addr", addr, "--ca", ca.CertFile, "--cert", bob.Cert, "--key", bob.Key, "ls"}, exitError,
			`the client certificate "bob" has no role on this node`},
		{"plain HTTP to HTTPS", []string{"--addr", "http://" + addr, "ls"}, exitError, "the node serves HTTPS: use an https:// address"},
		{"--ca with http://", []string{"--addr", "http://" + addr, "--ca", ca.CertFile, "ls"}, exitUsage, "--ca, --cert and --key are for HTTPS"},
		{"--cert without --key", []string{"--addr", addr, "--cert", alice.Cert, "ls"}, exitUsage, "--cert and --key go together"},
		{"unreadable CA", []string{"--addr", addr, "--ca", ca.Dir + "/nope.pem", "ls"}, exitUsage, "nope.pem: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runWith(t, nil, nil, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) || tc.stderr == "" && stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s\nstdout:\n%s\nwant exit %d, stderr containing:\n%s", code, stderr, stdout, tc.code, tc.stderr)
			}
		})
	}
	required := startSecureNode(t, control.Security{TLS: ca.Node(t, "n2").Config(), RequireClientCert: true, CertRoles: map[string]api.Role{"*": api.RoleRead}})
	if _, stderr, code := runWith(t, nil, nil, "--addr", required, "--ca", ca.CertFile, "ls"); code != exitError ||
		!strings.Contains(stderr, "the node requires a client certificate: give --cert and --key") {
		t.Fatalf("mutual TLS without --cert: exit %d\n%s", code, stderr)
	}
	stranger := other.Client(t, "mallory")
	if _, stderr, code := runWith(t, nil, nil, "--addr", required, "--ca", ca.CertFile, "--cert", stranger.Cert, "--key", stranger.Key, "ls"); code != exitError ||
		!strings.Contains(stderr, "the node refused the client certificate --cert "+stranger.Cert) {
		t.Fatalf("mutual TLS with another CA's certificate: exit %d\n%s", code, stderr)
	}
}

func TestTokenOverPlainHTTPWarns(t *testing.T) {
	var warn bytes.Buffer
	c := &client{creds: credentials{token: "x", tokenFrom: "--token-file t"}, warn: &warn}
	c.warnPlainToken(&url.URL{Scheme: "http", Host: "127.0.0.1:7070"})
	c.warnPlainToken(&url.URL{Scheme: "https", Host: "10.0.0.1:7070"})
	if warn.Len() != 0 {
		t.Fatalf("warned for loopback or HTTPS: %s", warn.String())
	}
	c.warnPlainToken(&url.URL{Scheme: "http", Host: "10.0.0.1:7070"})
	c.warnPlainToken(&url.URL{Scheme: "http", Host: "10.0.0.1:7070"})
	if want := "sluice: warning: sending the token from --token-file t over plain HTTP to 10.0.0.1:7070: anyone on the way can read it; use https://\n"; warn.String() != want {
		t.Fatalf("warning %q, want once %q", warn.String(), want)
	}
}

func TestCertsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs") // made by certs ca
	run := func(args ...string) (string, string, int) { return runWith(t, nil, nil, append(args, "--dir", dir)...) }
	if _, stderr, code := run("certs", "node", "n1"); code != exitError || !strings.Contains(stderr, "make one with: sluice certs ca --dir "+dir) {
		t.Fatalf("node without a CA: exit %d %s", code, stderr)
	}
	if out, stderr, code := run("certs", "ca"); code != exitOK || !strings.Contains(out, "ca-key.pem (its key, mode 0600") {
		t.Fatalf("ca: exit %d %s %s", code, out, stderr)
	}
	if _, stderr, code := run("certs", "ca"); code != exitError || !strings.Contains(stderr, "exists") {
		t.Fatalf("ca again without --force: exit %d %s", code, stderr)
	}
	out, stderr, code := run("certs", "node", "n1", "--dns", "n1.example", "--ip", "10.0.0.1", "--valid", "30d")
	if code != exitOK || !strings.Contains(out, `node certificate "n1", valid for n1, n1.example, 10.0.0.1, until`) {
		t.Fatalf("node: exit %d %s %s", code, out, stderr)
	}
	if _, _, code := run("certs", "client", "alice"); code != exitOK {
		t.Fatalf("client: exit %d", code)
	}
	for _, f := range []string{"ca-key.pem", "n1-key.pem", "alice-key.pem"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", f, fi.Mode().Perm(), err)
		}
	}
	src, err := creds.Load(creds.Config{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "n1.pem"), KeyFile: filepath.Join(dir, "n1-key.pem")})
	if err != nil {
		t.Fatal(err)
	}
	if leaf := src.Leaf(); creds.Identity(leaf) != "n1" || leaf.NotAfter.Sub(leaf.NotBefore).Hours() != 30*24 {
		t.Errorf("n1: %q valid %v", creds.Identity(leaf), leaf.NotAfter.Sub(leaf.NotBefore))
	}
	for _, args := range [][]string{{"certs", "node", ".."}, {"certs", "client", "a/b"}, {"certs", "client", "x", "--valid", "forever"}} {
		if _, stderr, code := run(args...); code != exitUsage {
			t.Errorf("%v: exit %d %s, want usage", args, code, stderr)
		}
	}
}
