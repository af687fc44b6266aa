package control_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// client is a small client of the control API for tests.
type client struct {
	t    *testing.T
	base string
}

func (a client) do(method, path string, body any, out any) int {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, a.base+path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if s, ok := out.(*string); ok {
			*s = string(b)
		} else if err := json.Unmarshal(b, out); err != nil {
			a.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

func startEmbedded(t *testing.T, records int64, deploy []string) (*node.Runtime, client) {
	t.Helper()
	return startEmbeddedAs(t, sdk.ExactlyOnce, records, deploy)
}

func startEmbeddedAs(t *testing.T, g sdk.Guarantee, records int64, deploy []string) (*node.Runtime, client) {
	t.Helper()
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0", Deploy: deploy, Guarantee: g},
		testkinds.Gen(records, 1000, 0, 1), testkinds.CounterFactory(2, false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	return rt, client{t: t, base: "http://" + rt.HTTPAddr()}
}

func TestDeployScaleKillThroughTheAPI(t *testing.T) {
	_, a := startEmbedded(t, 0, []string{"count"})
	var ops []api.OperatorView
	if code := a.do("GET", "/v1/operators", nil, &ops); code != 200 || len(ops) != 1 || ops[0].Name != "count" {
		t.Fatalf("GET /v1/operators = %d %+v, want only count", code, ops)
	}
	var dr api.DeployResponse
	code := a.do("POST", "/v1/operators", api.DeployRequest{Manifest: api.Manifest{Name: "gen", Instances: 2}}, &dr)
	if code != 201 || !dr.Created || dr.Operator.Instances != 2 || dr.Operator.Kind != "gen" {
		t.Fatalf("deploy gen = %d %+v", code, dr)
	}
	dr = api.DeployResponse{}
	code = a.do("POST", "/v1/operators", api.DeployRequest{Manifest: api.Manifest{Name: "gen", Instances: 1}}, &dr)
	if code != 200 || dr.Created || dr.Operator.Instances != 1 {
		t.Fatalf("redeploy gen with new settings = %d %+v", code, dr)
	}
	if code := a.do("PUT", "/v1/operators/count/instances", api.ScaleRequest{Instances: 5}, &dr); code != 200 || dr.Operator.Instances != 5 || dr.Operator.Epoch != 1 {
		t.Fatalf("scale count = %d %+v", code, dr)
	}
	sluicetest.WaitFor(t, 10*time.Second, "count to run 5 instances", func() bool {
		var ov api.OperatorView
		a.do("GET", "/v1/operators/count", nil, &ov)
		return ov.State == "running" && len(ov.Placement) == 5
	})
	var e api.Error
	if code := a.do("PUT", "/v1/operators/nope/instances", api.ScaleRequest{Instances: 2}, &e); code != 404 {
		t.Fatalf("scale unknown = %d %+v, want 404", code, e)
	}
	if code := a.do("PUT", "/v1/operators/count/instances", api.ScaleRequest{Instances: 0}, &e); code != 400 || !strings.Contains(strings.Join(e.Fields, ";"), "instances: must be ≥ 1, got 0") {
		t.Fatalf("scale to 0 = %d %+v", code, e)
	}
	bad := api.Manifest{Name: "x y", Instances: -1, Inputs: []api.ManifestInput{{Stream: "s", Routing: "hash"}}, CPUs: -1}
	if code := a.do("POST", "/v1/operators", api.DeployRequest{Manifest: bad}, &e); code != 400 || len(e.Fields) < 4 {
		t.Fatalf("invalid manifest = %d %+v, want 400 naming every field", code, e)
	}
	var graph string
	a.do("GET", "/v1/graph", nil, &graph)
	if !strings.Contains(graph, "gen → words → count [group-by]") {
		t.Fatalf("graph:\n%s", graph)
	}
	a.do("GET", "/v1/graph?format=dot", nil, &graph)
	if !strings.Contains(graph, `"stream:words" -> "op:count" [label="group-by"]`) {
		t.Fatalf("dot:\n%s", graph)
	}
	if code := a.do("DELETE", "/v1/operators/gen", nil, &dr); code != 200 {
		t.Fatalf("kill = %d", code)
	}
	a.do("GET", "/v1/graph", nil, &graph)
	if !strings.Contains(graph, "(no producer) → words → count") {
		t.Fatalf("after kill, graph does not mark words as having no producer:\n%s", graph)
	}
	var cs api.ClusterStatus
	if code := a.do("GET", "/v1/status", nil, &cs); code != 200 || len(cs.Nodes) != 1 || !cs.Nodes[0].Healthy {
		t.Fatalf("status = %d %+v", code, cs)
	}
}

func TestConcurrentDeploysOfOneNameConflict(t *testing.T) {
	_, a := startEmbedded(t, 0, []string{})
	for round := 0; round < 5; round++ {
		name := fmt.Sprintf("count%d", round)
		codes := make([]int, 2)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var e api.Error
				codes[i] = a.do("POST", "/v1/operators", api.DeployRequest{Manifest: api.Manifest{Name: name, Kind: "count", Instances: i + 1}}, &e)
				if codes[i] == 409 && (!e.Conflict || !strings.Contains(e.Error, name)) {
					t.Errorf("conflict answer %+v does not say what conflicted", e)
				}
			}()
		}
		wg.Wait()
		// One creates the operator; the other either lost the race (409)
		// or arrived after the first had landed (200: a settings change).
		created := 0
		for _, c := range codes {
			if c == 201 {
				created++
			} else if c != 409 && c != 200 {
				t.Fatalf("round %d: answer %d", round, c)
			}
		}
		if created != 1 {
			t.Fatalf("round %d: answers %v, want exactly one 201", round, codes)
		}
		t.Logf("round %d: answers %v", round, codes)
	}
}

func TestDeploymentIsOneChange(t *testing.T) {
	rt, a := startEmbedded(t, 0, []string{"count"})
	before := rt.Node().Topology().Version
	var dr api.DeploymentResponse
	code := a.do("POST", "/v1/deployments", api.DeploymentRequest{Manifests: []api.Manifest{{Name: "gen"}, {Name: "count", Instances: 3}}}, &dr)
	if code != 201 || dr.Version != before+1 || len(dr.Operators) != 2 || !dr.Created[0] || dr.Created[1] || dr.Operators[1].Instances != 3 {
		t.Fatalf("deployment = %d %+v, want 201, version %d, gen created and count rescaled to 3", code, dr, before+1)
	}
	// One invalid manifest: nothing is deployed, and every problem is named.
	var e api.Error
	code = a.do("POST", "/v1/deployments", api.DeploymentRequest{Manifests: []api.Manifest{{Name: "other", Kind: "gen"}, {Name: "bad name", Instances: -1}}}, &e)
	if code != 400 || len(e.Fields) == 0 || !strings.Contains(strings.Join(e.Fields, "\n"), `manifests[1] ("bad name")`) {
		t.Fatalf("invalid deployment = %d %+v, want 400 naming manifests[1]", code, e)
	}
	var ops []api.OperatorView
	a.do("GET", "/v1/operators", nil, &ops)
	for _, op := range ops {
		if op.Name == "other" {
			t.Fatal("an invalid deployment deployed part of itself")
		}
	}
	if code := a.do("POST", "/v1/deployments", api.DeploymentRequest{}, &e); code != 400 {
		t.Fatalf("empty deployment = %d, want 400", code)
	}
	if code := a.do("POST", "/v1/deployments", api.DeploymentRequest{Manifests: []api.Manifest{{Name: "gen"}, {Name: "gen"}}}, &e); code != 400 {
		t.Fatalf("deployment naming gen twice = %d %+v, want 400", code, e)
	}
}

// Records produced to a stream nobody reads are counted, and the count
// shows in the streams, the graph and the node's status. (Without a
// guarantee they are dropped; with one they are held: see actors.)
func TestUnreadRecordsShowInStreamsAndGraph(t *testing.T) {
	const records = 3000
	_, a := startEmbeddedAs(t, sdk.NoGuarantee, records, []string{"gen"})
	var views []api.StreamView
	sluicetest.WaitEvery(t, 30*time.Second, 10*time.Millisecond, "every record counted as dropped", func() bool {
		views = nil
		a.do("GET", "/v1/streams", nil, &views)
		for _, v := range views {
			if v.Name == "words" && v.Dropped == records {
				return true
			}
		}
		return false
	})
	var text string
	a.do("GET", "/v1/graph", nil, &text)
	if want := fmt.Sprintf("gen → words → (no consumer)  [no reader: %d dropped]", records); !strings.Contains(text, want) {
		t.Fatalf("graph:\n%s\nwant a line %q", text, want)
	}
	var dot string
	a.do("GET", "/v1/graph?format=dot", nil, &dot)
	if want := fmt.Sprintf(`label="words\nno reader: %d dropped"`, records); !strings.Contains(dot, want) {
		t.Fatalf("dot:\n%s\nwant %s", dot, want)
	}
	var st struct {
		Streams []struct {
			Stream  string `json:"stream"`
			Dropped int64  `json:"dropped"`
		} `json:"streams"`
	}
	a.do("GET", "/v1/node", nil, &st)
	if len(st.Streams) != 1 || st.Streams[0].Stream != "words" || st.Streams[0].Dropped != records {
		t.Fatalf("node status streams = %+v, want words with %d dropped", st.Streams, records)
	}
}
