package node_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/topology"
	tconsul "github.com/sluicehq/sluice/topology/consul"
)

// TestTopologyWrittenAroundTheAPIIsRefused is issue 31's attacker item 6:
// whoever can write Consul's KV (a token with key:write on sluice/, or a
// Consul without ACLs) wrote a topology with a higher version that killed
// an operator cluster-wide. A node with node certificates signs what it
// stores and acts only on what a node of its CA signed: the forged kill is
// not acted on, is logged, and the signed topology is written back over it.
func TestTopologyWrittenAroundTheAPIIsRefused(t *testing.T) {
	agent := consultest.Start(t)
	ca := credstest.NewCA(t, "cluster CA")
	f := ca.Node(t, "n1")
	var logs sluicetest.Buffer
	rt, err := node.Start(context.Background(), node.Config{
		NodeConfig: node.NodeConfig{NodeID: "n1", DataDir: t.TempDir(), NoSync: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		Consul:     agent.Addr(), ClusterName: "sealed", Guarantee: sdk.AtLeastOnce,
		NodeSecurity: &node.NodeSecurity{TLS: f.Config()},
	}, sink)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })

	raw, err := tconsul.New(agent.Addr(), "sealed", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var signed topology.Topology
	sluicetest.WaitFor(t, 30*time.Second, "the node to store a signed topology with the sink", func() bool {
		signed, err = raw.Load(ctx)
		_, ok := signed.Find("sink")
		return err == nil && ok && signed.Seal != nil && signed.Seal.Signer == "n1"
	})
	running := func() bool {
		for _, st := range rt.Status() {
			if st.Name == "sink" && len(st.Instances) == 2 {
				return true
			}
		}
		return false
	}
	sluicetest.WaitFor(t, 30*time.Second, "the sink's two instances running", running)

	forged, err := signed.Kill("sink", true)
	if err != nil {
		t.Fatal(err)
	}
	forged.Version = signed.Version + 5
	if err := raw.Restore(ctx, signed.Version, forged); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 30*time.Second, "the signed topology written back over the forged one", func() bool {
		cur, err := raw.Load(ctx)
		_, ok := cur.Find("sink")
		return err == nil && ok && cur.Version == signed.Version && cur.Seal != nil
	})
	if !running() {
		t.Fatalf("the forged kill was acted on: status %+v", rt.Status())
	}
	if l := logs.String(); !strings.Contains(l, "TOPOLOGY WRITTEN AROUND THE CONTROL API") || !strings.Contains(l, "has no signature") {
		t.Fatalf("the forgery was not logged as such; logs:\n%s", l)
	}
}
