package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/toolbin"
)

// walkthroughMarker precedes the README's cluster walkthrough.
const walkthroughMarker = "<!-- walkthrough: run verbatim by TestREADMEWalkthrough -->\n```sh\n"

// readmeWalkthrough returns the shell block of the README that follows
// the marker.
func readmeWalkthrough(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), walkthroughMarker)
	if !ok {
		t.Fatalf("README.md has no %q", walkthroughMarker)
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatal("the README's walkthrough block does not end")
	}
	return block + "\n"
}

// TestREADMEWalkthrough runs the README's cluster walkthrough verbatim,
// setting only the variables at its top (its directory, the Consul binary
// and ports picked now): Consul, three TLS nodes, and the CLI's status,
// ls, graph, deploy, scale, describe, tail and kill on them. (It broke at
// its first CLI command: the nodes listened on 127.0.0.1:0 and the CLI
// asked 127.0.0.1:7070.) Its Consul refuses writes without a token (no
// node logs that it is open), the nodes use a token of their own, and the
// token files it writes are the user's alone.
func TestREADMEWalkthrough(t *testing.T) {
	script := readmeWalkthrough(t)
	work := t.TempDir()
	ports := freePorts(t, 10)
	port := func(i int) string { return ports[i][strings.LastIndex(ports[i], ":")+1:] }
	env := append(os.Environ(),
		"WORK="+work,
		"CONSUL="+consultest.Binary(t),
		"CONSUL_PORT="+port(0),
		"CONSUL_PORTS=-dns-port "+port(1)+" -server-port "+port(2)+" -serf-lan-port "+port(3)+" -serf-wan-port "+port(4)+
			" -grpc-port "+port(5)+" -grpc-tls-port "+port(6),
		"HTTP_PORTS="+port(7)+" "+port(8)+" "+port(9),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = "../..", env
	out, err := cmd.CombinedOutput()
	if err != nil {
		for _, log := range []string{"consul.log", "n1.log", "n2.log", "n3.log"} {
			if b, rerr := os.ReadFile(filepath.Join(work, log)); rerr == nil {
				t.Logf("%s (end):\n%s", log, toolbin.Tail(string(b), 30))
			}
		}
		t.Fatalf("the walkthrough failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"(no producer) → trending → dashboard",
		"deployed trending-urls (created)",
		"scaled publisher-counts to 6 instances",
		"\ttop\t", // the tailed record of the trending stream
		"killed trending-urls",
		"walkthrough done",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the walkthrough's output has no %q:\n%s", want, out)
		}
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		b, err := os.ReadFile(filepath.Join(work, n+".log"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "INSECURE") || strings.Contains(string(b), "could not check whether Consul") {
			t.Errorf("%s found its Consul open to writes without a token (or could not tell):\n%s", n, toolbin.Tail(string(b), 20))
		}
	}
	for _, f := range []string{"tokens", "token", "certs/ca-key.pem", "consul-token", "consul-admin-token"} {
		fi, err := os.Stat(filepath.Join(work, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v: others can read a secret", f, fi.Mode().Perm())
		}
	}
}
