package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
)

// fakeNode serves the endpoints of the control API (control/api.go) with
// canned answers, and records the requests it gets.
type fakeNode struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []request
	answers  map[string]answer // by route, "METHOD /path/{name}"
}

// request is one request a fakeNode got.
type request struct {
	Method, Path, Query, Body string
}

// answer is a canned answer; a string body is sent as text/plain, anything
// else as JSON.
type answer struct {
	status int
	body   any
}

// The routes of the control API.
var routes = []string{
	"GET /v1/status",
	"GET /v1/operators",
	"GET /v1/operators/{name}",
	"POST /v1/operators",
	"POST /v1/deployments",
	"PUT /v1/operators/{name}/instances",
	"DELETE /v1/operators/{name}",
	"GET /v1/streams",
	"GET /v1/graph",
	"GET /v1/checkpoints",
	"GET /v1/checkpoints/{id}",
	"POST /v1/checkpoints",
	"POST /v1/node/drain",
}

func newFakeNode(t *testing.T) *fakeNode {
	t.Helper()
	f := &fakeNode{answers: map[string]answer{
		"GET /v1/status":                     {http.StatusOK, fixtureStatus},
		"GET /v1/operators":                  {http.StatusOK, []api.OperatorView{fixtureSplit, fixtureCount}},
		"GET /v1/operators/{name}":           {http.StatusOK, fixtureCount},
		"POST /v1/operators":                 {http.StatusCreated, api.DeployResponse{Operator: fixtureCount, Version: 7, Created: true}},
		"POST /v1/deployments":               {http.StatusCreated, api.DeploymentResponse{Operators: []api.OperatorView{fixtureCount}, Created: []bool{true}, Version: 7}},
		"PUT /v1/operators/{name}/instances": {http.StatusOK, api.DeployResponse{Operator: scaled(fixtureCount, 8), Version: 8}},
		"DELETE /v1/operators/{name}":        {http.StatusOK, api.DeployResponse{Operator: fixtureCount, Version: 9}},
		"GET /v1/streams":                    {http.StatusOK, fixtureStreams},
		"GET /v1/graph":                      {http.StatusOK, fixtureGraph},
		"GET /v1/checkpoints":                {http.StatusOK, []api.CheckpointView{fixtureSavepoint, fixtureCheckpoint}},
		"GET /v1/checkpoints/{id}":           {http.StatusOK, fixtureCheckpointDetail},
		"POST /v1/checkpoints":               {http.StatusCreated, fixtureSavepoint},
		"POST /v1/node/drain":                {http.StatusOK, api.DrainStatus{Node: "n2", Drained: true}},
	}}
	mux := http.NewServeMux()
	for _, route := range routes {
		mux.HandleFunc(route, func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			f.mu.Lock()
			f.requests = append(f.requests, request{r.Method, r.URL.Path, r.URL.RawQuery, string(body)})
			a := f.answers[route]
			f.mu.Unlock()
			if r.URL.Query().Get("format") == "dot" {
				a.body = fixtureDot
			}
			if s, ok := a.body.(string); ok {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.WriteHeader(a.status)
				_, _ = io.WriteString(w, s)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(a.status)
			_ = json.NewEncoder(w).Encode(a.body)
		})
	}
	// Anything else is recorded and answered 404, as the real server does.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, request{r.Method, r.URL.Path, r.URL.RawQuery, ""})
		f.mu.Unlock()
		http.NotFound(w, r)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// on sets the answer to route.
func (f *fakeNode) on(route string, status int, body any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[route] = answer{status, body}
}

// got returns the requests so far.
func (f *fakeNode) got() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.requests...)
}

// sluice runs the command line args against the fake node (adding --addr)
// and returns what it printed and its exit code.
func (f *fakeNode) sluice(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runWith(t, nil, nil, append([]string{"--addr", f.srv.URL}, args...)...)
}

// runWith runs sluice with the given standard input and environment.
func runWith(t *testing.T, stdin io.Reader, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var out, errOut bytes.Buffer
	a := &app{stdin: stdin, stdout: &out, stderr: &errOut, getenv: func(k string) string { return env[k] }}
	code = runApp(a, args)
	return out.String(), errOut.String(), code
}

func scaled(op api.OperatorView, n int) api.OperatorView {
	op.Instances = n
	return op
}

var fixtureCount = api.OperatorView{
	Name: "count", Kind: "counter", Executable: "/opt/sluice/wordcount-node",
	Instances: 3, KeyGroups: 256, Epoch: 2,
	Inputs:  []core.Input{{Stream: "words", Routing: core.GroupBy}, {Stream: "ticks", Routing: core.Broadcast}},
	Outputs: []string{"counts"},
	CPUs:    0.5, Mem: 256, Retries: 3,
	DeployedAt: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC),
	Autoscale:  &core.AutoscaleSpec{Max: 8, CoolDown: 30 * time.Second, DryRun: true},
	State:      "degraded",
	Placement: []api.InstanceView{
		{Index: 0, Node: "n1", State: "running", FirstGroup: 0, EndGroup: 86, Processed: 1200, Produced: 1180},
		{Index: 1, Node: "n2", State: "running", FirstGroup: 86, EndGroup: 171, Processed: 1100, Produced: 1100},
		{Index: 2, Node: "n1", State: "failed", FirstGroup: 171, EndGroup: 256, Processed: 7, Produced: 4,
			Restarts: 11, DeadLetters: 3, LastError: "parse \"x\":\tinvalid\nsyntax"},
	},
}

var fixtureSplit = api.OperatorView{
	Name: "split", Kind: "split", Instances: 2, KeyGroups: 256, Epoch: 1,
	Inputs:     []core.Input{{Stream: "sentences", Routing: core.Shuffle}},
	Outputs:    []string{"words"},
	DeployedAt: time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC),
	State:      "pending",
	Pending:    `no node hosts kind "split"`,
	Placement:  []api.InstanceView{{Index: 0, State: "pending", EndGroup: 128}, {Index: 1, State: "pending", FirstGroup: 128, EndGroup: 256}},
}

var fixtureStatus = api.ClusterStatus{
	Node: "n1", TopologyVersion: 9,
	Nodes: []api.NodeView{
		{Member: cluster.Member{ID: "n1", Address: "10.0.0.1:8090", HTTPAddr: "10.0.0.1:7070", Kinds: []string{"counter", "top"}, Version: "0.4.0"}, Healthy: true, Instances: 2},
		{Member: cluster.Member{ID: "n2", Address: "10.0.0.2:8090", HTTPAddr: "10.0.0.2:7070", Kinds: []string{"counter"}, Version: "0.4.0"}, Error: "connection refused", Instances: 1},
	},
	Operators: []api.OperatorView{fixtureCount, fixtureSplit},
	Pending:   []string{`split: no node hosts kind "split"`, "count[2]: awaiting state from n2"},
	Launcher:  []api.LaunchedView{{Operator: "split", ID: "split-1", Where: "mesos agent a7", State: "staging", Restarts: 1, Message: "pulling executable"}},
}

var fixtureStreams = []api.StreamView{
	{Name: "words", Producers: []string{"split"}, Consumers: []api.StreamReader{{Operator: "count", Routing: core.GroupBy}}},
	{Name: "counts", Producers: []string{"count"}, Consumers: []api.StreamReader{}, NoConsumer: true},
}

// fixtureGraph and fixtureDot are in the form control.GraphText and
// control.GraphDOT render; the CLI prints them as they are. fixtureGraph
// lacks its final newline, which sluice adds.
const fixtureGraph = `topology version 9: 2 operators
count → counts → (no consumer)
(no producer) → sentences → split [shuffle]
split → words → count [group-by]`

const fixtureDot = `digraph sluice {
  rankdir=LR;
  "op:count" [shape=box, label="count ×3"];
  "op:split" [shape=box, label="split ×2"];
  "stream:counts" [shape=ellipse, label="counts", style=dashed, color=red, xlabel="no consumer"];
  "op:count" -> "stream:counts";
  "stream:words" [shape=ellipse, label="words"];
  "op:split" -> "stream:words";
  "stream:words" -> "op:count" [label="group-by"];
}
`
