package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/control/api"
)

// writeFile writes a file in a temporary directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// deployed decodes the manifests of the POST requests in reqs: one
// manifest per POST /v1/operators, several per POST /v1/deployments.
func deployed(t *testing.T, reqs []request) []api.Manifest {
	t.Helper()
	var out []api.Manifest
	for _, r := range reqs {
		switch {
		case r.Method == http.MethodPost && r.Path == "/v1/operators":
			var dr api.DeployRequest
			if err := json.Unmarshal([]byte(r.Body), &dr); err != nil {
				t.Fatalf("request body %q: %v", r.Body, err)
			}
			out = append(out, dr.Manifest)
		case r.Method == http.MethodPost && r.Path == "/v1/deployments":
			var dr api.DeploymentRequest
			if err := json.Unmarshal([]byte(r.Body), &dr); err != nil {
				t.Fatalf("request body %q: %v", r.Body, err)
			}
			out = append(out, dr.Manifests...)
		default:
			t.Errorf("got request %s %s, want POST /v1/operators or /v1/deployments", r.Method, r.Path)
		}
	}
	return out
}

func check(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\ngot\n%s\nwant\n%s", what, got, want)
	}
}

func checkCode(t *testing.T, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("got exit code %d, want %d", got, want)
	}
}

const countYAML = `name: count
kind: counter
instances: 3
inputs:
  - stream: words
    routing: group-by
outputs: [counts]
environment:
  PORT: 8080
`

func TestDeploy(t *testing.T) {
	f := newFakeNode(t)
	file := writeFile(t, "count.yaml", countYAML)
	stdout, stderr, code := f.sluice(t, "deploy", "-f", file)
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, "deployed count (created), topology version 7\n")
	check(t, "stderr", stderr, "")
	want := []api.Manifest{{
		Name: "count", Kind: "counter", Instances: 3,
		Inputs:      []api.ManifestInput{{Stream: "words", Routing: "group-by"}},
		Outputs:     []string{"counts"},
		Environment: map[string]string{"PORT": "8080"},
	}}
	if got := deployed(t, f.got()); !reflect.DeepEqual(got, want) {
		t.Errorf("got deployed %+v, want %+v", got, want)
	}
}

// Several manifests, from one file or several, are one change: one
// request, one topology version.
func TestDeploySeveral(t *testing.T) {
	f := newFakeNode(t)
	f.on("POST /v1/deployments", http.StatusOK, api.DeploymentResponse{Version: 12, Created: []bool{false, true, false, false}})
	a := writeFile(t, "a.yaml", "name: a\n---\nname: b\n")
	b := writeFile(t, "b.json", `[{"name": "c"}]`)
	stdin := strings.NewReader("name: d\n")
	stdout, stderr, code := runWith(t, stdin, nil, "--addr", f.srv.URL, "deploy", "-f", a, "-f", b, "--filename", "-")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, `deployed a (updated)
deployed b (created)
deployed c (updated)
deployed d (updated)
4 operators deployed as one change, topology version 12
`)
	check(t, "stderr", stderr, "")
	if reqs := f.got(); len(reqs) != 1 {
		t.Fatalf("got %d requests, want one: %+v", len(reqs), reqs)
	}
	want := []api.Manifest{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}
	if got := deployed(t, f.got()); !reflect.DeepEqual(got, want) {
		t.Errorf("got deployed %+v, want %+v", got, want)
	}
}

func TestDeployJSON(t *testing.T) {
	f := newFakeNode(t)
	f.on("POST /v1/operators", http.StatusCreated, api.DeployResponse{Operator: api.OperatorView{Name: "a", Kind: "a", Instances: 1}, Version: 3, Created: true})
	file := writeFile(t, "a.yaml", "name: a\n")
	stdout, _, code := f.sluice(t, "--json", "deploy", "-f", file)
	checkCode(t, code, exitOK)
	one := `{
  "operator": {
    "name": "a",
    "kind": "a",
    "instances": 1,
    "keyGroups": 0,
    "epoch": 0,
    "inputs": null,
    "outputs": null,
    "deployedAt": "0001-01-01T00:00:00Z",
    "state": "",
    "placement": null
  },
  "version": 3,
  "created": true
}
`
	check(t, "stdout", stdout, one)
}

// TestDeployInvalid checks that every problem of every file is printed and
// nothing is deployed.
func TestDeployInvalid(t *testing.T) {
	f := newFakeNode(t)
	good := writeFile(t, "good.yaml", "name: ok\n")
	bad := writeFile(t, "bad.yaml", `name: count
instances: -1
inputs:
  - stream: words
    routing: hash
---
name: top
restart:
  window: 5 minutes
---
name: count
`)
	typo := writeFile(t, "typo.yaml", "name: a\ninstnaces: 2\nretries: many\n")
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	stdout, stderr, code := f.sluice(t, "deploy", "-f", good, "-f", bad, "-f", typo, "-f", missing)
	checkCode(t, code, exitError)
	check(t, "stdout", stdout, "")
	check(t, "stderr", stderr, `sluice: `+bad+`: manifest 1 ("count") is invalid:
  instances: must be ≥ 1, got -1
  inputs[0].routing: unknown routing "hash": want shuffle, round-robin, group-by or broadcast
sluice: `+bad+`: manifest 2 ("top") is invalid:
  restart.window: bad duration "5 minutes": unknown unit " minutes"; want a number and a unit (ns, us, ms, s, m, h), such as "30s" or "1h30m"
sluice: `+bad+`: manifest 3 ("count") is invalid:
  name: "count" is also the name of manifest 1 in `+bad+`; deploy each operator once
sluice: `+typo+` is not a valid manifest file:
  line 2: unknown field "instnaces" (did you mean "instances"?)
  line 3: retries: want an integer, got "many"
sluice: open `+missing+`: no such file or directory
`)
	if reqs := f.got(); len(reqs) != 0 {
		t.Errorf("got requests %+v, want none", reqs)
	}
}

// Server errors are reported alike for one manifest (POST /v1/operators)
// and several (one POST /v1/deployments).
func TestDeployServerErrors(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   any
		code   int
		stderr string // with WHAT for "a" or "2 operators" and PATH for the endpoint
	}{
		{"invalid", http.StatusBadRequest,
			api.Error{Error: `invalid manifest "a"`, Fields: []string{"instances: must be ≤ keyGroups (16), got 32", `kind: no node hosts kind "a" and no executable is given`}},
			exitError, `sluice: deploy WHAT: invalid manifest "a"
  instances: must be ≤ keyGroups (16), got 32
  kind: no node hosts kind "a" and no executable is given
`},
		{"conflict", http.StatusConflict,
			api.Error{Error: "topology changed: version 8 is not 7", Conflict: true},
			exitConflict, `sluice: deploy WHAT: topology changed: version 8 is not 7
sluice: conflict: the topology changed while this change was being made, so it was not applied; check the cluster (sluice ls) and run the command again
`},
		{"conflict without a JSON body", http.StatusConflict, "conflict\n",
			exitConflict, `sluice: deploy WHAT: POST PATH: 409 Conflict: conflict
sluice: conflict: the topology changed while this change was being made, so it was not applied; check the cluster (sluice ls) and run the command again
`},
		{"server failure", http.StatusInternalServerError, api.Error{Error: "consul: unavailable"},
			exitError, "sluice: deploy WHAT: consul: unavailable\n"},
	}
	shapes := []struct{ name, file, path, what string }{
		{"one manifest", "name: a\n", "/v1/operators", "a"},
		{"several manifests", "name: a\n---\nname: b\n", "/v1/deployments", "2 operators"},
	}
	for _, shape := range shapes {
		for _, tc := range cases {
			t.Run(shape.name+"/"+tc.name, func(t *testing.T) {
				f := newFakeNode(t)
				f.on("POST "+shape.path, tc.status, tc.body)
				file := writeFile(t, "m.yaml", shape.file)
				stdout, stderr, code := f.sluice(t, "deploy", "-f", file)
				checkCode(t, code, tc.code)
				check(t, "stdout", stdout, "")
				check(t, "stderr", stderr, strings.NewReplacer("WHAT", shape.what, "PATH", shape.path).Replace(tc.stderr))
				if got := len(f.got()); got != 1 {
					t.Errorf("got %d requests, want 1", got)
				}
			})
		}
	}
}

func TestDeployUsage(t *testing.T) {
	f := newFakeNode(t)
	_, stderr, code := f.sluice(t, "deploy")
	checkCode(t, code, exitUsage)
	check(t, "stderr", stderr, "sluice: required flag(s) \"filename\" not set\nRun 'sluice deploy --help' for usage.\n")
	_, stderr, code = f.sluice(t, "deploy", "count.yaml")
	checkCode(t, code, exitUsage)
	check(t, "stderr", stderr, "sluice: deploy takes no arguments, got [\"count.yaml\"]: give each manifest file with -f, as in: sluice deploy -f count.yaml\nRun 'sluice deploy --help' for usage.\n")
}
