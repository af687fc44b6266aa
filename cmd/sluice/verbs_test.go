package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/control/api"
)

// checkRequests compares the requests a fake node got with want.
func checkRequests(t *testing.T, f *fakeNode, want ...request) {
	t.Helper()
	if got := f.got(); !reflect.DeepEqual(got, want) {
		t.Errorf("got requests\n\t%+v\nwant\n\t%+v", got, want)
	}
}

// indented returns v as the CLI prints JSON: indented by two spaces.
func indented(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func TestScale(t *testing.T) {
	f := newFakeNode(t)
	stdout, stderr, code := f.sluice(t, "scale", "count", "8")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, "scaled count to 8 instances, topology version 8\n")
	check(t, "stderr", stderr, "")
	checkRequests(t, f, request{Method: "PUT", Path: "/v1/operators/count/instances", Body: `{"instances":8}`})

	stdout, _, code = f.sluice(t, "scale", "count", "8", "--json")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, indented(t, api.DeployResponse{Operator: scaled(fixtureCount, 8), Version: 8}))
}

func TestScaleUsage(t *testing.T) {
	cases := []struct{ name, stderr string }{
		{"", "sluice: accepts 2 arg(s), received 1\nRun 'sluice scale --help' for usage.\n"},
		{"x", "sluice: INSTANCES must be a whole number, got \"x\"\nRun 'sluice scale --help' for usage.\n"},
		{"-1", "sluice: INSTANCES must be a whole number, got \"-1\"\nRun 'sluice scale --help' for usage.\n"},
		{"2.5", "sluice: INSTANCES must be a whole number, got \"2.5\"\nRun 'sluice scale --help' for usage.\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeNode(t)
			args := []string{"scale", "count"}
			if tc.name != "" {
				args = append(args, "--", tc.name)
			}
			stdout, stderr, code := f.sluice(t, args...)
			checkCode(t, code, exitUsage)
			check(t, "stdout", stdout, "")
			check(t, "stderr", stderr, tc.stderr)
			checkRequests(t, f)
		})
	}
	f := newFakeNode(t)
	_, stderr, code := f.sluice(t, "scale", "word count", "2")
	checkCode(t, code, exitUsage)
	check(t, "stderr", stderr, "sluice: bad operator name: \"word count\" has ' ': use letters, digits, '-', '_' and '.'\nRun 'sluice scale --help' for usage.\n")
	checkRequests(t, f)
}

func TestScaleConflict(t *testing.T) {
	f := newFakeNode(t)
	f.on("PUT /v1/operators/{name}/instances", http.StatusConflict, api.Error{Error: "topology changed", Conflict: true})
	_, stderr, code := f.sluice(t, "scale", "count", "2")
	checkCode(t, code, exitConflict)
	check(t, "stderr", stderr, "sluice: scale count: topology changed\n"+
		"sluice: conflict: the topology changed while this change was being made, so it was not applied; check the cluster (sluice ls) and run the command again\n")
}

func TestKill(t *testing.T) {
	f := newFakeNode(t)
	stdout, stderr, code := f.sluice(t, "kill", "count")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, "killed count, topology version 9\n")
	check(t, "stderr", stderr, "")

	stdout, _, code = f.sluice(t, "kill", "--purge", "count")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, "killed count and purged its state, topology version 9\n")

	stdout, _, code = f.sluice(t, "kill", "count", "--json")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, indented(t, api.DeployResponse{Operator: fixtureCount, Version: 9}))

	checkRequests(t, f,
		request{Method: "DELETE", Path: "/v1/operators/count"},
		request{Method: "DELETE", Path: "/v1/operators/count", Query: "purge=1"},
		request{Method: "DELETE", Path: "/v1/operators/count"},
	)
}

func TestKillNotFound(t *testing.T) {
	f := newFakeNode(t)
	f.on("DELETE /v1/operators/{name}", http.StatusNotFound, api.Error{Error: `operator "nope" is not deployed`})
	stdout, stderr, code := f.sluice(t, "kill", "nope")
	checkCode(t, code, exitError)
	check(t, "stdout", stdout, "")
	check(t, "stderr", stderr, "sluice: kill nope: operator \"nope\" is not deployed\n")
}

func TestLs(t *testing.T) {
	f := newFakeNode(t)
	stdout, stderr, code := f.sluice(t, "ls")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, `NAME   KIND     INSTANCES  STATE     NODES       PENDING
count  counter  3          degraded  n1×2 n2×1   -
split  split    2          pending   unplaced×2  no node hosts kind "split"
`)
	check(t, "stderr", stderr, "")

	stdout, _, code = f.sluice(t, "list", "--json")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, indented(t, []api.OperatorView{fixtureSplit, fixtureCount}))

	f.on("GET /v1/operators", http.StatusOK, []api.OperatorView{})
	stdout, _, code = f.sluice(t, "ls")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, "no operators deployed\n")

	checkRequests(t, f,
		request{Method: "GET", Path: "/v1/operators"},
		request{Method: "GET", Path: "/v1/operators"},
		request{Method: "GET", Path: "/v1/operators"},
	)
}

func TestDescribe(t *testing.T) {
	f := newFakeNode(t)
	stdout, stderr, code := f.sluice(t, "describe", "count")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, `Name:                count
Kind:                counter
Executable:          /opt/sluice/wordcount-node
State:               degraded
Pending:             -
Instances:           3
Key groups:          256
Epoch:               2
Deployed:            2026-01-02T15:04:05Z
Resources:           cpus 0.5, mem 256 MB, retries 3
Autoscale:           1–8 instances at 70% utilization, down after 5m0s, cool-down 30s (dry run: recommends only)
Dead-letter stream:  count.deadletter
Inputs:
  STREAM  ROUTING
  words   group-by
  ticks   broadcast
Outputs:
  counts
Placement:
  INDEX  NODE  STATE    KEY GROUPS  PROCESSED  PRODUCED  RESTARTS  DEAD LETTERS  LAST ERROR
  0      n1    running  0-85        1200       1180      0         0             -
  1      n2    running  86-170      1100       1100      0         0             -
  2      n1    failed   171-255     7          4         11        3             parse "x": invalid syntax
`)
	check(t, "stderr", stderr, "")

	stdout, _, code = f.sluice(t, "describe", "count", "--json")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, indented(t, fixtureCount))

	f.on("GET /v1/operators/{name}", http.StatusOK, fixtureSplit)
	stdout, _, code = f.sluice(t, "describe", "split")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, `Name:                split
Kind:                split
Executable:          -
State:               pending
Pending:             no node hosts kind "split"
Instances:           2
Key groups:          256
Epoch:               1
Deployed:            2026-01-02T15:00:00Z
Resources:           -
Autoscale:           off
Dead-letter stream:  split.deadletter
Inputs:
  STREAM     ROUTING
  sentences  shuffle
Outputs:
  words
Placement:
  INDEX  NODE  STATE    KEY GROUPS  PROCESSED  PRODUCED  RESTARTS  DEAD LETTERS  LAST ERROR
  0      -     pending  0-127       0          0         0         0             -
  1      -     pending  128-255     0          0         0         0             -
`)

	checkRequests(t, f,
		request{Method: "GET", Path: "/v1/operators/count"},
		request{Method: "GET", Path: "/v1/operators/count"},
		request{Method: "GET", Path: "/v1/operators/split"},
	)
}

func TestDescribeNotFound(t *testing.T) {
	f := newFakeNode(t)
	f.on("GET /v1/operators/{name}", http.StatusNotFound, api.Error{Error: `operator "nope" is not deployed`})
	stdout, stderr, code := f.sluice(t, "describe", "nope")
	checkCode(t, code, exitError)
	check(t, "stdout", stdout, "")
	check(t, "stderr", stderr, "sluice: operator \"nope\" is not deployed\n")
}

func TestGraph(t *testing.T) {
	f := newFakeNode(t)
	stdout, stderr, code := f.sluice(t, "graph")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, fixtureGraph+"\n")
	check(t, "stderr", stderr, "")

	stdout, _, code = f.sluice(t, "graph", "--dot")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, fixtureDot)

	stdout, _, code = f.sluice(t, "graph", "--json")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, indented(t, fixtureStreams))

	_, stderr, code = f.sluice(t, "graph", "--json", "--dot")
	checkCode(t, code, exitUsage)
	check(t, "stderr", stderr, "sluice: --dot and --json cannot be used together\nRun 'sluice graph --help' for usage.\n")

	checkRequests(t, f,
		request{Method: "GET", Path: "/v1/graph"},
		request{Method: "GET", Path: "/v1/graph", Query: "format=dot"},
		request{Method: "GET", Path: "/v1/streams"},
	)
}

func TestStatus(t *testing.T) {
	f := newFakeNode(t)
	stdout, stderr, code := f.sluice(t, "status")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, `Node n1, topology version 9

NODES
ID  ADDRESS        HTTP           KINDS        VERSION  HEALTHY  INSTANCES  ERROR
n1  10.0.0.1:8090  10.0.0.1:7070  counter,top  0.4.0    yes      2          -
n2  10.0.0.2:8090  10.0.0.2:7070  counter      0.4.0    no       1          connection refused

OPERATORS
NAME   KIND     INSTANCES  STATE     NODES       PENDING
count  counter  3          degraded  n1×2 n2×1   -
split  split    2          pending   unplaced×2  no node hosts kind "split"

PENDING
split: no node hosts kind "split"
count[2]: awaiting state from n2

LAUNCHER
OPERATOR  ID       WHERE           STATE    RESTARTS  MESSAGE
split     split-1  mesos agent a7  staging  1         pulling executable
`)
	check(t, "stderr", stderr, "")

	stdout, _, code = f.sluice(t, "status", "--json")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, indented(t, fixtureStatus))

	f.on("GET /v1/status", http.StatusOK, api.ClusterStatus{Node: "n1", TopologyVersion: 0})
	stdout, _, code = f.sluice(t, "status")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, "Node n1, topology version 0\n\nNODES\nnone\n\nOPERATORS\nnone\n\nPENDING\nnone\n\nLAUNCHER\nnone\n")

	checkRequests(t, f,
		request{Method: "GET", Path: "/v1/status"},
		request{Method: "GET", Path: "/v1/status"},
		request{Method: "GET", Path: "/v1/status"},
	)
}

// TestAddr checks the forms of --addr and $SLUICE_ADDR.
func TestAddr(t *testing.T) {
	f := newFakeNode(t)
	hostPort := strings.TrimPrefix(f.srv.URL, "http://")
	cases := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"URL", []string{"--addr", f.srv.URL}, nil},
		{"URL with a slash", []string{"--addr", f.srv.URL + "/"}, nil},
		{"host:port", []string{"--addr", hostPort}, nil},
		{"upper-case scheme", []string{"--addr=HTTP://" + hostPort}, nil},
		{"environment", nil, map[string]string{"SLUICE_ADDR": hostPort}},
		{"flag over environment", []string{"--addr", hostPort}, map[string]string{"SLUICE_ADDR": "http://127.0.0.1:1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.got())
			_, stderr, code := runWith(t, nil, tc.env, append(tc.args, "ls")...)
			checkCode(t, code, exitOK)
			check(t, "stderr", stderr, "")
			if got := f.got(); len(got) != before+1 || got[before].Path != "/v1/operators" {
				t.Errorf("got requests %+v, want one more GET /v1/operators", got[before:])
			}
		})
	}
}

// TestAddrPrefix checks that a path in --addr prefixes every request (a
// node behind a proxy).
func TestAddrPrefix(t *testing.T) {
	f := newFakeNode(t)
	_, stderr, code := runWith(t, nil, nil, "--addr", f.srv.URL+"/sluice/", "describe", "count")
	checkCode(t, code, exitError)
	check(t, "stderr", stderr, "sluice: GET /v1/operators/count: 404 Not Found: 404 page not found\n")
	checkRequests(t, f, request{Method: "GET", Path: "/sluice/v1/operators/count"})
}

func TestAddrBad(t *testing.T) {
	cases := []struct {
		name, addr, from, stderr string
	}{
		{"scheme", "ftp://x", "--addr", `sluice: --addr: bad address "ftp://x": want http:// or https://, not ftp://`},
		{"no host", "http://", "--addr", `sluice: --addr: bad address "http://": no host`},
		{"query", "http://x?a=1", "--addr", `sluice: --addr: bad address "http://x?a=1": want scheme://host:port[/path] only`},
		{"environment", "ftp://y", "$SLUICE_ADDR", `sluice: $SLUICE_ADDR: bad address "ftp://y": want http:// or https://, not ftp://`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args, env := []string{"--addr", tc.addr, "ls"}, map[string]string(nil)
			if tc.from == "$SLUICE_ADDR" {
				args, env = []string{"ls"}, map[string]string{"SLUICE_ADDR": tc.addr}
			}
			_, stderr, code := runWith(t, nil, env, args...)
			checkCode(t, code, exitUsage)
			check(t, "stderr", stderr, tc.stderr+"\nRun 'sluice ls --help' for usage.\n")
		})
	}
}

func TestUnreachable(t *testing.T) {
	f := newFakeNode(t)
	url := f.srv.URL
	f.srv.Close()
	stdout, stderr, code := runWith(t, nil, nil, "--addr", url, "ls")
	checkCode(t, code, exitError)
	check(t, "stdout", stdout, "")
	want := "sluice: GET " + url + "/v1/operators: dial tcp " + strings.TrimPrefix(url, "http://") + ": connect: connection refused" +
		" (is a Sluice node's control API at " + url + "? set --addr or $SLUICE_ADDR)\n"
	check(t, "stderr", stderr, want)
}

func TestAnswerNotJSON(t *testing.T) {
	f := newFakeNode(t)
	f.on("GET /v1/operators", http.StatusNotFound, "404 page not found\n")
	_, stderr, code := f.sluice(t, "ls")
	checkCode(t, code, exitError)
	check(t, "stderr", stderr, "sluice: GET /v1/operators: 404 Not Found: 404 page not found\n")

	f.on("GET /v1/operators", http.StatusOK, "not json")
	_, stderr, code = f.sluice(t, "ls")
	checkCode(t, code, exitError)
	check(t, "stderr", stderr, "sluice: GET /v1/operators: unexpected answer: invalid character 'o' in literal null (expecting 'u')\n")
}

func TestUsage(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown command", []string{"frob"}, "sluice: unknown command \"frob\" for \"sluice\"\nRun 'sluice --help' for usage.\n"},
		{"unknown flag", []string{"ls", "--all"}, "sluice: unknown flag: --all\nRun 'sluice ls --help' for usage.\n"},
		{"bad flag value", []string{"--timeout", "soon", "ls"}, "sluice: invalid argument \"soon\" for \"--timeout\" flag: time: invalid duration \"soon\"\nRun 'sluice ls --help' for usage.\n"},
		{"negative timeout", []string{"--timeout", "-1s", "ls"}, "sluice: --timeout must be ≥ 0, got -1s\nRun 'sluice ls --help' for usage.\n"},
		{"extra argument", []string{"ls", "x"}, "sluice: unknown command \"x\" for \"sluice ls\"\nRun 'sluice ls --help' for usage.\n"},
		{"missing argument", []string{"describe"}, "sluice: accepts 1 arg(s), received 0\nRun 'sluice describe --help' for usage.\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runWith(t, nil, nil, tc.args...)
			checkCode(t, code, exitUsage)
			check(t, "stdout", stdout, "")
			check(t, "stderr", stderr, tc.stderr)
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{nil, {"--help"}, {"help", "deploy"}, {"scale", "-h"}} {
		stdout, stderr, code := runWith(t, nil, nil, args...)
		checkCode(t, code, exitOK)
		if !strings.Contains(stdout, "Usage:") || stderr != "" {
			t.Errorf("sluice %q: got stdout %q, stderr %q; want help on stdout only", args, stdout, stderr)
		}
	}
}

func TestTimeout(t *testing.T) {
	// The handler answers only when the client has given up.
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	stdout, stderr, code := runWith(t, nil, nil, "--addr", srv.URL, "--timeout", "50ms", "ls")
	checkCode(t, code, exitError)
	check(t, "stdout", stdout, "")
	check(t, "stderr", stderr, "sluice: GET "+srv.URL+"/v1/operators: no answer within 50ms (--timeout)\n")
}
