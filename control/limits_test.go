package control_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// serveWith runs a control API with cfg in front of an embedded node.
func serveWith(t *testing.T, cfg control.Config) *control.Server {
	t.Helper()
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, Deploy: []string{}},
		testkinds.CounterFactory(1, false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	cfg.Addr, cfg.Logger = "127.0.0.1:0", sluicetest.Logger(t)
	srv, l, err := control.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve(l, rt.Node())
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return srv
}

// closedByServer reads from c until the server closes it, and fails the
// test if that does not happen within limit (a bound for a hung test, not
// a measurement).
func closedByServer(t *testing.T, c net.Conn, limit time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server still holds the connection after %v", limit)
	}
}

// TestSlowClientsAreDisconnected: a client that stops sending in the
// middle of a body, or of its headers, or stays idle, is disconnected by
// the server (today's 19,900 held connections exhausted the fd limit).
func TestSlowClientsAreDisconnected(t *testing.T) {
	srv := serveWith(t, control.Config{Limits: control.Limits{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 300 * time.Millisecond,
		IdleTimeout: 300 * time.Millisecond}})
	for _, tc := range []struct{ name, send string }{
		{"slow body", "POST /v1/operators HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"manifest\": {"},
		{"slow body on a GET", "GET /v1/operators HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n{"},
		{"slow headers", "GET /v1/operators HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "},
		{"idle after a request", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"},
		{"nothing at all", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, tc.send); err != nil {
				t.Fatal(err)
			}
			closedByServer(t, c, 30*time.Second)
		})
	}
}

// TestRequestSizeLimits: bodies over Limits.MaxBodyBytes are refused with
// 413 (a 50 MB manifest ×4 took a node to 2.8 GB), headers over
// MaxHeaderBytes with 431.
func TestRequestSizeLimits(t *testing.T) {
	_, a := startEmbedded(t, 0, []string{})
	huge := api.DeployRequest{Manifest: api.Manifest{Name: "gen", Environment: map[string]string{"BIG": strings.Repeat("x", 2<<20)}}}
	var e api.Error
	if code := a.do("POST", "/v1/operators", huge, &e); code != http.StatusRequestEntityTooLarge || !strings.Contains(e.Error, "larger than 1048576 bytes") {
		t.Fatalf("a 2 MiB manifest = %d %+v, want 413", code, e)
	}
	if code := a.do("POST", "/v1/deployments", api.DeploymentRequest{Manifests: []api.Manifest{huge.Manifest}}, &e); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 2 MiB deployment = %d %+v, want 413", code, e)
	}
	req, _ := http.NewRequest("GET", a.base+"/v1/operators", nil)
	req.Header.Set("X-Big", strings.Repeat("y", 200<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("200 KiB of headers = %d, want 431", resp.StatusCode)
	}
}

// TestRequestsAreDecodedStrictly: every endpoint refuses unknown fields,
// duplicate keys, trailing data, unknown query parameters and bodies
// where none belongs.
func TestRequestsAreDecodedStrictly(t *testing.T) {
	_, a := startEmbedded(t, 0, []string{"count"})
	for _, tc := range []struct {
		name, method, path, body, want string
	}{
		{"unknown field on scale", "PUT", "/v1/operators/count/instances", `{"instances": 2, "replicas": 9}`, "replicas: unknown field"},
		{"duplicate key on scale", "PUT", "/v1/operators/count/instances", `{"instances": 2, "instances": 9}`, "instances: given twice"},
		{"field in another case on scale", "PUT", "/v1/operators/count/instances", `{"Instances": 2}`, `did you mean "instances"?`},
		{"trailing garbage on deploy", "POST", "/v1/operators", `{"manifest": {"name": "gen"}} {"manifest": {"name": "x"}}`, "after the JSON object"},
		{"duplicate key in a manifest", "POST", "/v1/operators", `{"manifest": {"name": "gen", "instances": 1, "instances": 2}}`, "manifest.instances: given twice"},
		{"duplicate environment variable", "POST", "/v1/operators", `{"manifest": {"name": "gen", "environment": {"A": "1", "A": "2"}}}`, "manifest.environment.A: given twice"},
		{"unknown field in a deployment", "POST", "/v1/deployments", `{"manifests": [{"name": "gen", "replicas": 2}]}`, "manifests[0].replicas: unknown field"},
		{"trailing garbage on a deployment", "POST", "/v1/deployments", `{"manifests": [{"name": "gen"}]}]`, "invalid JSON"},
		{"unknown query parameter", "GET", "/v1/operators?all=1", "", `unknown query parameter "all"`},
		{"bad purge", "DELETE", "/v1/operators/count?purge=maybe", "", `purge: unknown value "maybe"`},
		{"bad graph format", "GET", "/v1/graph?format=svg", "", `format: unknown "svg"`},
		{"body on a GET", "GET", "/v1/status", `{"x": 1}`, "takes no request body"},
		{"body on a DELETE", "DELETE", "/v1/operators/count", `{"purge": true}`, "takes no request body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			c := caller{t: t, base: a.base}
			var e api.Error
			if code := c.do(tc.method, tc.path, body, &e); code != 400 || !strings.Contains(e.Error, tc.want) {
				t.Fatalf("got %d %q, want 400 containing %q", code, e.Error, tc.want)
			}
		})
	}
	// Nothing was changed by the refused requests.
	var ov api.OperatorView
	if code := a.do("GET", "/v1/operators/count", nil, &ov); code != 200 || ov.Instances != 2 {
		t.Fatalf("count after the refused requests = %d %+v, want 2 instances", code, ov)
	}
	var ops []api.OperatorView
	a.do("GET", "/v1/operators", nil, &ops)
	if len(ops) != 1 {
		t.Fatalf("operators after the refused requests: %+v, want count only", ops)
	}
}

// TestNodeStatusIsTheAPIView: GET /v1/node answers api.NodeStatus, with
// the JSON names of the rest of the API (the runtime's own structs are not
// serialised any more), and the stream counts keep their names.
func TestNodeStatusIsTheAPIView(t *testing.T) {
	_, a := startEmbeddedAs(t, sdk.NoGuarantee, 10, []string{"gen"})
	var raw map[string]json.RawMessage
	sluicetest.WaitFor(t, 30*time.Second, "gen's records counted as dropped", func() bool {
		raw = nil
		a.do("GET", "/v1/node", nil, &raw)
		return strings.Contains(string(raw["streams"]), `"dropped": 10`)
	})
	var ops []map[string]json.RawMessage
	if err := json.Unmarshal(raw["operators"], &ops); err != nil || len(ops) == 0 {
		t.Fatalf("operators: %s (%v)", raw["operators"], err)
	}
	var ins []map[string]json.RawMessage
	if err := json.Unmarshal(ops[0]["instances"], &ins); err != nil || len(ins) == 0 {
		t.Fatalf("instances: %s (%v)", ops[0]["instances"], err)
	}
	for _, k := range []string{"name", "kind", "parallelism", "epoch", "inputs", "outputs", "instances"} {
		if _, ok := ops[0][k]; !ok {
			t.Errorf("operator lacks %q: %s", k, raw["operators"])
		}
	}
	for _, k := range []string{"index", "epoch", "node", "firstGroup", "endGroup", "state", "restarts", "processed", "produced", "deadLetters", "queued", "blockedNanos", "busyNanos", "stateBytes", "transientErrors"} {
		if _, ok := ins[0][k]; !ok {
			t.Errorf("instance lacks %q: %s", k, ops[0]["instances"])
		}
	}
	// The records count as dropped inside gen's Poll; its busy spell ends
	// when Poll returns, so wait for it rather than read it once.
	var st control.Status // the old name still decodes it
	sluicetest.WaitFor(t, 30*time.Second, "gen's busy time accounted", func() bool {
		st = control.Status{}
		a.do("GET", "/v1/node", nil, &st)
		return len(st.Operators) > 0 && len(st.Operators[0].Instances) > 0 && st.Operators[0].Instances[0].BusyNanos > 0
	})
	if st.Operators[0].Name != "gen" || st.Operators[0].Instances[0].State == "" || st.Streams[0].Stream != "words" {
		t.Fatalf("decoded: %+v", st)
	}
}

// TestOpenNodeRefusesExecutables: a node whose control API has no
// authentication accepts no operator with an executable (a launcher would
// run it for anyone), and no node accepts an environment that makes
// programs load code.
func TestOpenNodeRefusesExecutables(t *testing.T) {
	_, a := startEmbedded(t, 0, []string{})
	pwned := t.TempDir() + "/pwned"
	var e api.Error
	m := api.Manifest{Name: "x", Executable: "/usr/bin/perl", Environment: map[string]string{"PERL5OPT": fmt.Sprintf("-Mbase;system(q(id>%s))", pwned)}}
	if code := a.do("POST", "/v1/operators", api.DeployRequest{Manifest: m}, &e); code != 400 {
		t.Fatalf("deploy /usr/bin/perl with PERL5OPT = %d %+v, want 400", code, e)
	}
	got := strings.Join(e.Fields, "\n")
	for _, want := range []string{"executable: this node's control API has no authentication", "environment.PERL5OPT: refused"} {
		if !strings.Contains(got, want) {
			t.Errorf("fields lack %q:\n%s", want, got)
		}
	}
	m.Executable = ""
	e = api.Error{}
	if code := a.do("POST", "/v1/deployments", api.DeploymentRequest{Manifests: []api.Manifest{m}}, &e); code != 400 || !strings.Contains(strings.Join(e.Fields, "\n"), "environment.PERL5OPT") {
		t.Fatalf("deployment with PERL5OPT = %d %+v, want 400", code, e)
	}
	if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists: %v", pwned, err)
	}
	// Behind a proxy that authenticates (Insecure), executables are fine.
	behindProxy := serveWith(t, control.Config{Security: control.Security{Insecure: true}})
	c := caller{t: t, base: behindProxy.URL()}
	if code := c.do("POST", "/v1/operators", api.DeployRequest{Manifest: api.Manifest{Name: "x", Executable: "/opt/slugs/x"}}, &e); code != 201 {
		t.Fatalf("deploy with an executable behind an authenticating proxy = %d %+v, want 201", code, e)
	}
}
