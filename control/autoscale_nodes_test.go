package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// TestAutoscaleRecommendsNodes: a cluster without Mesos reports the nodes
// its operators need in GET /v1/autoscale, from the instances deployed
// (no operator autoscaled: their parallelism) at a node's capacity (here
// 1 cpu × 2 instances per cpu), and follows a scale.
func TestAutoscaleRecommendsNodes(t *testing.T) {
	pace := &testkinds.Pace{}
	pace.Set(50)
	rt, err := node.Start(context.Background(), node.Config{
		NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0",
		Autoscale: control.AutoscaleConfig{Interval: 100 * time.Millisecond, NodeCPUs: 1, InstancesPerCPU: 2}},
		testkinds.PacedGen(100, pace),
		func() sdk.Operator { return testkinds.Worker{Parallelism: 1} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	a := client{t: t, base: "http://" + rt.HTTPAddr()}
	deployed := func() int {
		n := 0
		for _, spec := range rt.Node().Topology().Operators {
			n += spec.Meta.Parallelism
		}
		return n
	}
	nodesFor := func(want int) api.AutoscaleNodes {
		var n api.AutoscaleNodes
		sluicetest.WaitEvery(t, 30*time.Second, 50*time.Millisecond, "the node recommendation", func() bool {
			var st api.AutoscaleStatus
			if code := a.do("GET", "/v1/autoscale", nil, &st); code != 200 {
				t.Fatalf("GET /v1/autoscale = %d", code)
			}
			if st.Nodes != nil {
				n = *st.Nodes
			}
			return st.Nodes != nil && n.Instances == want
		})
		return n
	}
	before := deployed()
	n := nodesFor(before)
	if n.Members != 1 || n.PerNode != 2 || n.CPUs != 1 || n.Recommended != (before+1)/2 {
		t.Fatalf("nodes = %+v, want 1 member, 2 per node, %d recommended for %d instances", n, (before+1)/2, before)
	}
	if code := a.do("PUT", "/v1/operators/work/instances", api.ScaleRequest{Instances: 6}, nil); code != 200 {
		t.Fatalf("scale = %d", code)
	}
	after := before + 5
	n = nodesFor(after)
	if n.Recommended != (after+1)/2 || !strings.Contains(n.Reason, "more than 1 nodes of 2 hold") {
		t.Fatalf("after the scale: %+v, want %d nodes recommended and the reason saying the cluster is too small", n, (after+1)/2)
	}
}
