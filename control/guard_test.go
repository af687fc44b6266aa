package control_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/control"
)

// send makes one request with the given headers and returns the status and
// the answer's body.
func send(t *testing.T, method, url, body string, header map[string]string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestCrossOriginChangesAreRefused: a web page of another origin cannot
// change an open node: a text/plain body (which a page sends without a
// preflight) is refused with 415, and a JSON one from another origin with
// 403; neither deploys nor kills. The same requests from the node's own
// origin, or without browser headers (the CLI), go through.
func TestCrossOriginChangesAreRefused(t *testing.T) {
	rt := startSecure(t, control.Security{})
	base := "http://" + rt.HTTPAddr()
	deploy := `{"manifest": {"name": "gen2", "kind": "gen"}}`
	exists := func(name string) bool {
		code, _ := send(t, "GET", base+"/v1/operators/"+name, "", nil)
		return code == http.StatusOK
	}
	refused := []struct {
		name, method, path, body string
		header                   map[string]string
		want                     int
	}{
		{"text/plain deploy", "POST", "/v1/operators", deploy, map[string]string{"Content-Type": "text/plain"}, 415},
		{"form deploy", "POST", "/v1/operators", deploy, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"no content type", "POST", "/v1/operators", deploy, nil, 415},
		{"cross-site JSON deploy", "POST", "/v1/operators", deploy,
			map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}, 403},
		{"other origin, no Sec-Fetch-Site", "POST", "/v1/operators", deploy,
			map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example:8080"}, 403},
		{"cross-site kill", "DELETE", "/v1/operators/count", "", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"cross-site checkpoint", "POST", "/v1/checkpoints", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
	}
	for _, c := range refused {
		code, body := send(t, c.method, base+c.path, c.body, c.header)
		if code != c.want {
			t.Errorf("%s: %s %s = %d %s, want %d", c.name, c.method, c.path, code, body, c.want)
		}
	}
	if exists("gen2") {
		t.Fatal("a refused cross-origin request deployed gen2")
	}
	if !exists("count") {
		t.Fatal("a refused cross-origin request killed count")
	}
	// The console's own requests (same origin) and the CLI's (no browser
	// headers) are served.
	code, body := send(t, "POST", base+"/v1/operators", deploy,
		map[string]string{"Content-Type": "application/json; charset=utf-8", "Sec-Fetch-Site": "same-origin", "Origin": base})
	if code != http.StatusCreated || !exists("gen2") {
		t.Fatalf("same-origin deploy = %d %s, want 201", code, body)
	}
	if code, body := send(t, "DELETE", base+"/v1/operators/gen2?purge=1", "", nil); code != http.StatusOK {
		t.Fatalf("CLI-like kill = %d %s, want 200", code, body)
	}
}

// TestForeignHostIsRefused: a request naming a host the node does not
// serve (a page on a name rebound to 127.0.0.1) is refused with 421 on
// every path, the console and /healthz included; IP addresses, localhost
// and the names of Security.Hosts are served.
func TestForeignHostIsRefused(t *testing.T) {
	rt := startSecure(t, control.Security{Hosts: []string{"sluice.test", "*.corp.test"}})
	base := "http://" + rt.HTTPAddr()
	_, port, _ := strings.Cut(rt.HTTPAddr(), ":")
	for _, path := range []string{"/v1/status", "/v1/streams/counts/tail", "/ui", "/healthz"} {
		for _, host := range []string{"evil.example", "evil.example:" + port, "sluice.test.evil.example", "corp.test.evil"} {
			code, body := send(t, "GET", base+path, "", map[string]string{"Host": host})
			if code != http.StatusMisdirectedRequest || !strings.Contains(body, "-control-hosts") {
				t.Errorf("GET %s with Host %s = %d %s, want 421 naming -control-hosts", path, host, code, body)
			}
		}
	}
	if code, _ := send(t, "PUT", base+"/v1/operators/count/instances", `{"instances": 1}`,
		map[string]string{"Host": "evil.example", "Content-Type": "application/json"}); code != http.StatusMisdirectedRequest {
		t.Errorf("PUT with Host evil.example = %d, want 421", code)
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "sluice.test:" + port, "sluice.test.", "a.corp.test", "[::1]:" + port} {
		if code, body := send(t, "GET", base+"/v1/status", "", map[string]string{"Host": host}); code != http.StatusOK {
			t.Errorf("GET /v1/status with Host %s = %d %s, want 200", host, code, body)
		}
	}
}
