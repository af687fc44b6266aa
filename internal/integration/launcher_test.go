package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/launcher"
)

// adminToken is the admin token of nodes started with launcherEnv; nodes
// without authentication ignore it.
const adminToken = "integration-admin-0123456789abcdef"

// launcherEnv configures the node processes started next (they inherit the
// test's environment) to run a launcher: their control API requires
// adminToken, and the launcher may start nodeBinary.
func launcherEnv(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("admin:"+adminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(control.EnvTokensFile, tokens)
	t.Setenv(launcher.EnvAllow, nodeBinary)
}

// call sends a request with adminToken.
func call(method string, n *node, path string, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(method, "http://"+n.http+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	return http.DefaultClient.Do(req)
}

func post(t *testing.T, n *node, m api.Manifest) int {
	t.Helper()
	b, _ := json.Marshal(api.DeployRequest{Manifest: m})
	resp, err := call(http.MethodPost, n, "/v1/operators", b)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func clusterStatus(n *node) (api.ClusterStatus, error) {
	var cs api.ClusterStatus
	resp, err := call(http.MethodGet, n, "/v1/status", nil)
	if err != nil {
		return cs, err
	}
	defer resp.Body.Close()
	return cs, json.NewDecoder(resp.Body).Decode(&cs)
}

// TestLaunchWithoutAuthenticationRefusesToStart: a node that would run a
// launcher with an open control API does not start (anyone could deploy
// an executable for it to run).
func TestLaunchWithoutAuthenticationRefusesToStart(t *testing.T) {
	agent := consultest.Start(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "n1.log")
	p, err := proctest.Start(nodeBinary, []string{"-id", "n1", "-data", filepath.Join(dir, "data"), "-consul", agent.Addr(), "-node-insecure", "-launch"}, log)
	if err == nil {
		p.Kill()
		t.Fatal("a node with -launch and no authentication started")
	}
	b, _ := os.ReadFile(log)
	if !errors.Is(err, proctest.ErrExited) || !strings.Contains(string(b), "Launch needs an authenticated control API") {
		t.Fatalf("got %v and log:\n%s\nwant an exit saying Launch needs an authenticated control API", err, b)
	}
}

func TestLauncherStartsSlugsAndStatusExplainsPending(t *testing.T) {
	agent := consultest.Start(t)
	launcherEnv(t)
	// n1 hosts only the generator and runs a launcher.
	c := newCluster(t, agent.Addr(), "-records", "0", "-rate", "2000", "-gen-parallelism", "1", "-host", "gen", "-launch")
	n1 := c.start("n1")

	// A kind nobody hosts, without an executable: pending, with the reason.
	if code := post(t, n1, api.Manifest{Name: "mystery", Kind: "nope", Inputs: []api.ManifestInput{{Stream: "words"}}}); code != 201 {
		t.Fatalf("deploy mystery = %d", code)
	}
	c.waitFor(30*time.Second, "mystery pending with its reason", func() bool {
		cs, err := clusterStatus(n1)
		return err == nil && strings.Contains(strings.Join(cs.Pending, "\n"), `mystery: no node hosts kind "nope" and the manifest names no executable to launch`)
	})

	// The counter's kind is hosted by no node either, but its manifest names
	// an executable: the launcher starts it, it joins and counts.
	// (The program's own "count" operator is deployed too, and pending:
	// n1 does not host its kind. "tally" is another operator of that kind.)
	if code := post(t, n1, api.Manifest{Name: "tally", Kind: "count", Executable: nodeBinary, Instances: 2,
		Inputs: []api.ManifestInput{{Stream: "words", Routing: "group-by"}}}); code != 201 {
		t.Fatalf("deploy tally = %d", code)
	}
	c.waitFor(time.Minute, "the launched slug to count records", func() bool {
		cs, err := clusterStatus(n1)
		if err != nil {
			return false
		}
		for _, op := range cs.Operators {
			if op.Name == "tally" && op.State == "running" {
				for _, in := range op.Placement {
					if in.Processed > 0 && strings.HasPrefix(in.Node, "tally-n1-") {
						return true
					}
				}
			}
		}
		return false
	})
	cs, _ := clusterStatus(n1)
	if len(cs.Launcher) != 1 || cs.Launcher[0].State != "running" || cs.Launcher[0].Where != "n1" {
		t.Fatalf("launcher status %+v, want one running process on n1", cs.Launcher)
	}
	if len(cs.Nodes) != 2 {
		t.Fatalf("%d nodes, want n1 and the slug", len(cs.Nodes))
	}

	// Killing the operator stops its process, which leaves the cluster.
	resp, err := call(http.MethodDelete, n1, "/v1/operators/tally", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c.waitFor(time.Minute, "the slug to leave", func() bool {
		cs, err := clusterStatus(n1)
		return err == nil && len(cs.Nodes) == 1 && len(cs.Launcher) == 0
	})
}
