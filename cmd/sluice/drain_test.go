package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/control/api"
)

// TestDrain: sluice drain asks the node to drain within --timeout (less a
// second, for the answer) and says so; a refusal, and a drain still going on, are errors (exit code 1) saying why.
func TestDrain(t *testing.T) {
	f := newFakeNode(t)
	stdout, stderr, code := f.sluice(t, "drain")
	checkCode(t, code, exitOK)
	check(t, "stdout", stdout, "node n2 drained: its instances run on the other nodes\n")
	check(t, "stderr", stderr, "")

	f.on("POST /v1/node/drain", http.StatusConflict, api.Error{Error: "actors: drain: the node is not in a cluster: no other node could take its instances"})
	_, stderr, code = f.sluice(t, "drain", "--timeout", "2m")
	checkCode(t, code, exitError)
	if want := "not in a cluster"; !strings.Contains(stderr, want) {
		t.Fatalf("stderr %q does not say %q", stderr, want)
	}
	f.on("POST /v1/node/drain", http.StatusServiceUnavailable, api.Error{Error: "still draining after 9s (it goes on; ask again)"})
	_, stderr, code = f.sluice(t, "drain")
	checkCode(t, code, exitError)
	if want := "run it again"; !strings.Contains(stderr, want) {
		t.Fatalf("stderr %q does not say %q", stderr, want)
	}
	checkRequests(t, f,
		request{Method: "POST", Path: "/v1/node/drain", Query: "timeout=9s"},
		request{Method: "POST", Path: "/v1/node/drain", Query: "timeout=1m59s"},
		request{Method: "POST", Path: "/v1/node/drain", Query: "timeout=9s"},
	)
}
