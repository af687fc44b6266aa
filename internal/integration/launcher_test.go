package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/consultest"
)

func post(t *testing.T, n *node, m api.Manifest) int {
	t.Helper()
	b, _ := json.Marshal(api.DeployRequest{Manifest: m})
	resp, err := http.Post("http://"+n.http+"/v1/operators", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func clusterStatus(n *node) (api.ClusterStatus, error) {
	var cs api.ClusterStatus
	resp, err := http.Get("http://" + n.http + "/v1/status")
	if err != nil {
		return cs, err
	}
	defer resp.Body.Close()
	return cs, json.NewDecoder(resp.Body).Decode(&cs)
}

func TestLauncherStartsSlugsAndStatusExplainsPending(t *testing.T) {
	agent := consultest.Start(t)
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
	req, _ := http.NewRequest(http.MethodDelete, "http://"+n1.http+"/v1/operators/tally", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c.waitFor(time.Minute, "the slug to leave", func() bool {
		cs, err := clusterStatus(n1)
		return err == nil && len(cs.Nodes) == 1 && len(cs.Launcher) == 0
	})
}
