package control_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/control/api"
)

// TestDrainRefused: POST /v1/node/drain on a node outside a cluster is
// refused (409, saying why: nobody would take its instances) and its
// instances keep running; a bad timeout is named (400). The live drain of
// a cluster's node is TestClusterDrainNode (without -race) and, through
// the Mesos framework, mesos' TestPoolAutoscale.
func TestDrainRefused(t *testing.T) {
	rt, a := startEmbeddedRate(t, t.TempDir(), 0, 1000)
	var e api.Error
	if code := a.do("POST", "/v1/node/drain?timeout=soon", nil, &e); code != 400 || !strings.Contains(e.Error, `timeout "soon"`) {
		t.Fatalf("POST /v1/node/drain?timeout=soon = %d %+v, want 400 naming the timeout", code, e)
	}
	if code := a.do("POST", "/v1/node/drain?timeout=5s", nil, &e); code != 409 || !strings.Contains(e.Error, "not in a cluster") {
		t.Fatalf("POST /v1/node/drain on an embedded node = %d %+v, want 409: not in a cluster", code, e)
	}
	if n := len(opStatus(rt, "count").Instances); n == 0 {
		t.Fatalf("count has no instance after a refused drain: %+v", rt.Status())
	}
}
