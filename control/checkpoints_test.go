package control_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
)

// The checkpoint endpoints list, describe and take checkpoints; the
// status carries the coordinator's account.
func TestCheckpointsThroughTheAPI(t *testing.T) {
	rt, a := startEmbedded(t, 20_000, []string{"gen", "count"})
	var list []api.CheckpointView
	sluicetest.WaitFor(t, time.Minute, "a checkpoint listed", func() bool {
		list = nil
		return a.do("GET", "/v1/checkpoints", nil, &list) == 200 && len(list) > 0
	})
	var sp api.CheckpointView
	if code := a.do("POST", "/v1/checkpoints", nil, &sp); code != 201 || !sp.Savepoint || sp.ID == 0 || sp.Instances != 3 || sp.Size == 0 {
		t.Fatalf("POST /v1/checkpoints = %d %+v; want a savepoint of 3 instances", code, sp)
	}
	list = nil
	if code := a.do("GET", "/v1/checkpoints", nil, &list); code != 200 || len(list) == 0 || list[0].ID < sp.ID {
		t.Fatalf("GET /v1/checkpoints = %d %+v; want the savepoint %d or newer first", code, list, sp.ID)
	}
	for i := 1; i < len(list); i++ {
		if list[i].ID >= list[i-1].ID {
			t.Fatalf("GET /v1/checkpoints not newest first: %d before %d", list[i-1].ID, list[i].ID)
		}
	}
	var d api.CheckpointDetail
	if code := a.do("GET", fmt.Sprintf("/v1/checkpoints/%d", sp.ID), nil, &d); code != 200 || d.ID != sp.ID || len(d.Nodes) != 1 || len(d.Nodes[0].Instances) != 3 {
		t.Fatalf("GET /v1/checkpoints/%d = %d %+v; want one node with 3 instances", sp.ID, code, d)
	}
	groups := 0
	for _, in := range d.Nodes[0].Instances {
		groups += in.EndGroup - in.FirstGroup
	}
	if groups != 2*256 { // gen's groups and count's
		t.Fatalf("checkpoint %d holds %d key groups, want 512", sp.ID, groups)
	}
	var e api.Error
	if code := a.do("GET", "/v1/checkpoints/1", nil, &e); code != 404 {
		t.Fatalf("GET /v1/checkpoints/1 = %d %+v, want 404", code, e)
	}
	if code := a.do("GET", "/v1/checkpoints/x", nil, &e); code != 400 {
		t.Fatalf("GET /v1/checkpoints/x = %d %+v, want 400", code, e)
	}
	var st api.ClusterStatus
	if code := a.do("GET", "/v1/status", nil, &st); code != 200 || st.Checkpoints == nil {
		t.Fatalf("GET /v1/status = %d, checkpoints %+v", code, st.Checkpoints)
	}
	if c := st.Checkpoints; c.Coordinator != rt.Node().ID() || c.Last < sp.ID || c.Completed == 0 || c.LastSize == 0 {
		t.Fatalf("status checkpoints %+v; want %s coordinating, %d or newer last", c, rt.Node().ID(), sp.ID)
	}
}

// Without exactly-once there are no checkpoints: 404, and no section in
// the status.
func TestNoCheckpointsAtLeastOnce(t *testing.T) {
	_, a := startEmbeddedAs(t, sdk.AtLeastOnce, 0, []string{"count"})
	var e api.Error
	for _, m := range []string{"GET", "POST"} {
		if code := a.do(m, "/v1/checkpoints", nil, &e); code != 404 {
			t.Fatalf("%s /v1/checkpoints = %d %+v, want 404", m, code, e)
		}
	}
	var st api.ClusterStatus
	if code := a.do("GET", "/v1/status", nil, &st); code != 200 || st.Checkpoints != nil {
		t.Fatalf("GET /v1/status = %d, checkpoints %+v; want none", code, st.Checkpoints)
	}
}
