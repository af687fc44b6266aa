//go:build !race

// Two nodes in one process: their protoactor remotes race on grpc's global
// logger, so this runs in make test's second pass, without -race (as the
// actors package's TestCluster* tests do).

package control_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// TestClusterDrainNode: POST /v1/node/drain on one of two nodes of an exactly-once
// pipeline moves its instances to the other, live, with their state: the
// drained node runs none and stays a member, the records keep flowing, the
// last node cannot be drained (nobody would take its instances), and every
// key is counted exactly once by work and by the sink through it all.
func TestClusterDrainNode(t *testing.T) {
	const keys = 200
	agent := consultest.Start(t)
	cluster := fmt.Sprintf("sluice-drain-%d", time.Now().UnixNano())
	checkpoints := t.TempDir()
	pace, arrivals := &testkinds.Pace{}, &testkinds.Arrivals{}
	pace.Set(400)
	start := func(id, dir string) *node.Runtime {
		rt, err := node.Start(context.Background(), node.Config{
			NodeConfig: node.NodeConfig{NodeID: id, DataDir: dir, NoSync: true, Logger: sluicetest.Logger(t).With("node", id)},
			Consul:     agent.Addr(), ClusterName: cluster, NodeSecurity: &node.NodeSecurity{Insecure: true}, HTTP: "127.0.0.1:0",
			Guarantee: sdk.ExactlyOnce, Checkpoints: checkpoints, CheckpointInterval: 300 * time.Millisecond},
			testkinds.PacedGen(keys, pace),
			func() sdk.Operator { return testkinds.Worker{Parallelism: 4} },
			func() sdk.Operator { return testkinds.Tally{Arrivals: arrivals} })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.Stop(context.Background()) }) // a second Stop returns the first's result
		return rt
	}
	dir1 := filepath.Join(t.TempDir(), "n1")
	n1 := start("n1", dir1)
	n2 := start("n2", filepath.Join(t.TempDir(), "n2"))
	running := func(rt *node.Runtime) int {
		n := 0
		for _, op := range rt.Status() {
			for _, in := range op.Instances {
				if in.State == "running" || in.State == "awaiting" {
					n++
				}
			}
		}
		return n
	}
	sluicetest.WaitFor(t, time.Minute, "both nodes running instances", func() bool {
		return running(n1) > 0 && running(n2) > 0 && progress(n1, "sink")+progress(n2, "sink") > 500
	})

	a2 := client{t: t, base: "http://" + n2.HTTPAddr()}
	began := arrivals.Count()
	var ds api.DrainStatus
	if code := a2.do("POST", "/v1/node/drain?timeout=50s", nil, &ds); code != 200 || !ds.Drained || ds.Node != "n2" {
		t.Fatalf("POST /v1/node/drain on n2 = %d %+v, want 200 drained", code, ds)
	}
	if n := running(n2); n != 0 {
		t.Fatalf("n2 runs %d instances after its drain: %+v", n, n2.Status())
	}
	if members, err := n1.Node().Members(context.Background()); err != nil || len(members) != 2 {
		t.Fatalf("members after the drain: %v %v, want n2 still among them", members, err)
	}
	sluicetest.WaitFor(t, 30*time.Second, "n1 to run every instance and the records to keep flowing", func() bool {
		return len(opStatus(n1, "work").Instances) >= 4 && arrivals.Count() > began+500
	})
	// Drained again: at once.
	if code := a2.do("POST", "/v1/node/drain", nil, &ds); code != 200 || !ds.Drained {
		t.Fatalf("a second drain of n2 = %d %+v, want 200", code, ds)
	}
	// The last node that takes instances cannot be drained.
	a1 := client{t: t, base: "http://" + n1.HTTPAddr()}
	var e api.Error
	if code := a1.do("POST", "/v1/node/drain", nil, &e); code != 409 || !strings.Contains(e.Error, "no other member hosts its kind") {
		t.Fatalf("POST /v1/node/drain on n1 = %d %+v, want 409: nobody else takes its instances", code, e)
	}

	// n2 stops at once (it holds nothing); then n1 drains the pipeline
	// and takes its final checkpoint.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sluicetest.Must(t, n2.Stop(ctx))
	sluicetest.Must(t, n1.Stop(ctx)) // what is in flight is processed, then the final checkpoint
	n := countedOnce(t, dir1, keys, "work", "sink")
	t.Logf("%d records, each counted once by work and by sink across the drain", n)
}
