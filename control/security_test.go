package control_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk/node"
)

const (
	adminToken = "admin-0123456789abcdef0123456789"
	readToken  = "read-0123456789abcdef0123456789a"
)

// caller is a client of the control API with a credential.
type caller struct {
	t     *testing.T
	base  string
	token string
	http  *http.Client
}

// do sends a request with body as JSON (a string is sent as it is) and
// decodes the answer into out; it returns the status code.
func (c caller) do(method, path string, body, out any) int {
	c.t.Helper()
	code, _, err := c.try(method, path, body, out)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return code
}

// try is do returning the error of a request that got no answer.
func (c caller) try(method, path string, body, out any) (int, http.Header, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.http
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if s, ok := out.(*string); ok {
			*s = string(b)
		} else if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, resp.Header, errors.New("decode answer " + string(b) + ": " + err.Error())
		}
	}
	return resp.StatusCode, resp.Header, nil
}

// startSecure runs an embedded node (gen, count) whose control API uses
// sec.
func startSecure(t *testing.T, sec control.Security) *node.Runtime {
	t.Helper()
	rt, err := node.Start(context.Background(), node.Config{
		NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0",
		Deploy: []string{"count"}, ControlSecurity: &sec},
		testkinds.Gen(0, 1000, 0, 1), testkinds.CounterFactory(2, false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	return rt
}

// TestAuthenticationAndRoles: without a valid token every endpoint but
// /healthz answers 401; a read token reads and gets 403 on changes; an
// admin token does everything.
func TestAuthenticationAndRoles(t *testing.T) {
	tokens := credstest.TokenFile(t, "admin:"+adminToken, "read:"+readToken)
	rt := startSecure(t, control.Security{TokensFile: tokens})
	base := "http://" + rt.HTTPAddr()
	anon := caller{t: t, base: base}
	bad := caller{t: t, base: base, token: "not-a-token-0123456789abcdef"}
	reader := caller{t: t, base: base, token: readToken}
	admin := caller{t: t, base: base, token: adminToken}

	if code := anon.do("GET", "/healthz", nil, nil); code != 200 {
		t.Fatalf("GET /healthz without a token = %d, want 200", code)
	}
	reads := []string{"/v1/node", "/v1/status", "/v1/nodes", "/v1/operators", "/v1/operators/count", "/v1/streams", "/v1/graph", "/v1/checkpoints", "/metrics"}
	changes := []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/operators", api.DeployRequest{Manifest: api.Manifest{Name: "gen"}}},
		{"POST", "/v1/deployments", api.DeploymentRequest{Manifests: []api.Manifest{{Name: "gen2", Kind: "gen"}}}},
		{"PUT", "/v1/operators/count/instances", api.ScaleRequest{Instances: 3}},
		{"DELETE", "/v1/operators/gen2?purge=1", nil},
		{"POST", "/v1/checkpoints", nil},
	}
	for _, path := range reads {
		for _, c := range []caller{anon, bad} {
			var e api.Error
			code, h, err := c.try("GET", path, nil, &e)
			if err != nil || code != 401 || e.Error == "" || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("GET %s with token %q = %d %+v (%v), want 401 with WWW-Authenticate: Bearer", path, c.token, code, e, err)
			}
		}
		if code := reader.do("GET", path, nil, nil); code != 200 {
			t.Errorf("GET %s with the read token = %d, want 200", path, code)
		}
	}
	for _, ch := range changes {
		var e api.Error
		if code := anon.do(ch.method, ch.path, ch.body, &e); code != 401 {
			t.Errorf("%s %s without a token = %d, want 401", ch.method, ch.path, code)
		}
		e = api.Error{}
		if code := reader.do(ch.method, ch.path, ch.body, &e); code != 403 || e.Role != api.RoleRead || e.Need != api.RoleAdmin ||
			!strings.Contains(e.Error, "needs the role admin") {
			t.Errorf("%s %s with the read token = %d %+v, want 403 naming the roles", ch.method, ch.path, code, e)
		}
		if code := admin.do(ch.method, ch.path, ch.body, nil); code/100 != 2 {
			t.Errorf("%s %s with the admin token = %d, want 2xx", ch.method, ch.path, code)
		}
	}
	if code := (caller{t: t, base: base, token: readToken[:10]}).do("GET", "/v1/operators", nil, nil); code != 401 {
		t.Errorf("a prefix of a token = %d, want 401", code)
	}
}

// tlsCaller returns a caller over HTTPS trusting ca, presenting files'
// certificate if given.
func tlsCaller(t *testing.T, base string, ca string, client *credstest.Files) caller {
	t.Helper()
	cfg := creds.Config{CAFile: ca, Logger: sluicetest.Logger(t)}
	if client != nil {
		cfg.CertFile, cfg.KeyFile = client.Cert, client.Key
	}
	src, err := creds.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := src.ClientTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return caller{t: t, base: base, http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}}
}

// TestTLSAndClientCertificates serves the API over HTTPS: certificates
// map to roles, a stranger's certificate or CA is refused, plain HTTP gets
// nothing.
func TestTLSAndClientCertificates(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	node := ca.Node(t, "n1")
	alice, bob := ca.Client(t, "alice"), ca.Client(t, "bob")
	rt := startSecure(t, control.Security{TLS: node.Config(), CertRoles: map[string]api.Role{"alice": api.RoleAdmin, "*": api.RoleRead}})
	base := "https://" + rt.HTTPAddr()

	if code := tlsCaller(t, base, ca.CertFile, nil).do("GET", "/v1/operators", nil, nil); code != 401 {
		t.Errorf("HTTPS without a credential = %d, want 401", code)
	}
	if code := tlsCaller(t, base, ca.CertFile, &alice).do("POST", "/v1/operators", api.DeployRequest{Manifest: api.Manifest{Name: "gen"}}, nil); code != 201 {
		t.Errorf("deploy with alice's certificate (admin) = %d, want 201", code)
	}
	var e api.Error
	if code := tlsCaller(t, base, ca.CertFile, &bob).do("PUT", "/v1/operators/gen/instances", api.ScaleRequest{Instances: 2}, &e); code != 403 ||
		!strings.Contains(e.Error, "certificate bob has the role read") {
		t.Errorf("scale with bob's certificate (read, by *) = %d %+v, want 403", code, e)
	}
	if code := tlsCaller(t, base, ca.CertFile, &bob).do("GET", "/v1/operators/gen", nil, nil); code != 200 {
		t.Errorf("GET with bob's certificate = %d, want 200", code)
	}

	stranger := credstest.NewCA(t, "stranger CA")
	mallory := stranger.Client(t, "mallory")
	if _, _, err := tlsCaller(t, base, ca.CertFile, &mallory).try("GET", "/v1/operators", nil, nil); err == nil {
		t.Error("a client certificate of another CA was accepted")
	}
	_, _, err := tlsCaller(t, base, stranger.CertFile, nil).try("GET", "/v1/operators", nil, nil)
	if !errors.Is(err, creds.ErrUnknownAuthority) || !strings.Contains(err.Error(), `the server's certificate "n1" is not signed by a CA in `+stranger.CertFile) {
		t.Errorf("trusting another CA: %v, want a creds.VerifyError naming the CA file", err)
	}
	var text string
	if code := (caller{t: t, base: "http://" + rt.HTTPAddr()}).do("GET", "/v1/operators", nil, &text); code != 400 || !strings.Contains(text, "HTTPS") {
		t.Errorf("plain HTTP to the HTTPS API = %d %q, want 400", code, text)
	}
}

// TestMutualTLSRequired refuses connections without a client certificate
// during the handshake, before any request.
func TestMutualTLSRequired(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	alice := ca.Client(t, "alice")
	tokens := credstest.TokenFile(t, "admin:"+adminToken)
	rt := startSecure(t, control.Security{TLS: ca.Node(t, "n1").Config(), RequireClientCert: true, TokensFile: tokens,
		CertRoles: map[string]api.Role{"alice": api.RoleRead}})
	base := "https://" + rt.HTTPAddr()
	noCert := tlsCaller(t, base, ca.CertFile, nil)
	noCert.token = adminToken
	if code, _, err := noCert.try("GET", "/v1/operators", nil, nil); err == nil {
		t.Fatalf("a token without a client certificate got %d, want the connection refused", code)
	}
	withCert := tlsCaller(t, base, ca.CertFile, &alice)
	if code := withCert.do("GET", "/v1/operators", nil, nil); code != 200 {
		t.Fatalf("alice = %d, want 200", code)
	}
	withCert.token = adminToken // a token on top of the certificate takes its role
	if code := withCert.do("POST", "/v1/operators", api.DeployRequest{Manifest: api.Manifest{Name: "gen"}}, nil); code != 201 {
		t.Fatalf("alice with the admin token = %d, want 201", code)
	}
}

// peerNode is a node that sees other as a member too, so that its control
// API asks other for its status.
type peerNode struct {
	*actors.Node
	self, other cluster.Member
}

func (p peerNode) Members(context.Context) ([]cluster.Member, error) {
	return []cluster.Member{p.self, p.other}, nil
}

// TestNodesAskEachOtherWithCredentials: a node asking another for its
// status (GET /v1/node, for the cluster's status) uses HTTPS verified
// against the CA, its own certificate and its peer token.
func TestNodesAskEachOtherWithCredentials(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	tokens := credstest.TokenFile(t, "admin:"+adminToken, "read:"+readToken)
	b := startSecure(t, control.Security{TLS: ca.Node(t, "b").Config(), TokensFile: tokens})

	// Node a: its own runtime, and a control API in front of a view of it
	// in which b is a member.
	askWith := func(sec control.Security) api.NodeView {
		t.Helper()
		rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{NodeID: "a", DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, Deploy: []string{}},
			testkinds.CounterFactory(1, false))
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Stop(context.Background())
		srv, l, err := control.Listen(control.Config{Addr: "127.0.0.1:0", Logger: sluicetest.Logger(t), Security: sec})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Shutdown(context.Background())
		srv.Serve(l, peerNode{Node: rt.Node(), self: cluster.Member{ID: "a", HTTPAddr: srv.Addr()}, other: cluster.Member{ID: "b", HTTPAddr: b.HTTPAddr()}})
		var cs api.ClusterStatus
		c := tlsCaller(t, srv.URL(), ca.CertFile, nil)
		c.token = adminToken
		if code := c.do("GET", "/v1/status", nil, &cs); code != 200 {
			var text string
			c.do("GET", "/v1/status", nil, &text)
			t.Fatalf("GET /v1/status = %d: %s", code, text)
		}
		for _, n := range cs.Nodes {
			if n.ID == "b" {
				return n
			}
		}
		t.Fatalf("no node b in %+v", cs.Nodes)
		return api.NodeView{}
	}
	if nv := askWith(control.Security{TLS: ca.Node(t, "a").Config(), TokensFile: tokens}); !nv.Healthy || nv.Error != "" {
		t.Fatalf("b as seen by a with the cluster's tokens and CA: %+v, want healthy", nv)
	}
	// A node whose token b does not know: b answers 401, and a says so.
	otherTokens := credstest.TokenFile(t, "admin:"+adminToken, "read:other-read-token-0123456789")
	if nv := askWith(control.Security{TLS: ca.Node(t, "a").Config(), TokensFile: otherTokens, PeerToken: "other-read-token-0123456789"}); nv.Healthy ||
		!strings.Contains(nv.Error, "401") || !strings.Contains(nv.Error, "not valid on this node") {
		t.Fatalf("b as seen by a with a token b does not know: %+v, want unhealthy with b's 401", nv)
	}
}

// TestOpenAPIOnLoopbackOnly: without authentication the control API
// listens on loopback only, unless told it is behind an authenticating
// proxy.
func TestOpenAPIOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "node1.example:0"} {
		if _, _, err := control.Listen(control.Config{Addr: addr}); !errors.Is(err, control.ErrNoAuth) {
			t.Errorf("Listen(%s) without authentication: %v, want ErrNoAuth", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		srv, l, err := control.Listen(control.Config{Addr: addr, Logger: sluicetest.Logger(t)})
		if err != nil {
			t.Fatalf("Listen(%s): %v", addr, err)
		}
		l.Close()
		_ = srv
	}
}

// TestCredentialsRotateWithoutRestart replaces the node's certificate and
// its tokens file while it serves: new connections see the new
// certificate, a removed token is refused.
func TestCredentialsRotateWithoutRestart(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	node := ca.Node(t, "n1")
	tokens := credstest.TokenFile(t, "admin:"+adminToken, "read:"+readToken)
	rt := startSecure(t, control.Security{TLS: node.Config(), TokensFile: tokens})
	base := "https://" + rt.HTTPAddr()
	// served returns the name of the certificate a new connection gets.
	served := func() string {
		c := tlsCaller(t, base, ca.CertFile, nil)
		c.token = readToken
		req, _ := http.NewRequest("GET", base+"/healthz", nil)
		resp, err := c.http.Do(req)
		if err != nil {
			return "error: " + err.Error()
		}
		resp.Body.Close()
		return creds.Identity(resp.TLS.PeerCertificates[0])
	}
	if got := served(); got != "n1" {
		t.Fatalf("served %q, want n1", got)
	}
	rotated := ca.Issue(t, creds.Request{Name: "n1-2", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usage: creds.NodeUsage, Valid: time.Hour})
	for _, f := range [][2]string{{rotated.Cert, node.Cert}, {rotated.Key, node.Key}} {
		b, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f[1]+".new", b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f[1]+".new", f[1]); err != nil {
			t.Fatal(err)
		}
	}
	sluicetest.WaitFor(t, 30*time.Second, "the node to serve the new certificate", func() bool { return served() == "n1-2" })

	reader := tlsCaller(t, base, ca.CertFile, nil)
	reader.token = readToken
	if code := reader.do("GET", "/v1/operators", nil, nil); code != 200 {
		t.Fatalf("read token before the revocation = %d", code)
	}
	if err := os.WriteFile(tokens+".new", []byte("admin:"+adminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tokens+".new", tokens); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 30*time.Second, "the read token to be refused", func() bool { return reader.do("GET", "/v1/operators", nil, nil) == 401 })
}
