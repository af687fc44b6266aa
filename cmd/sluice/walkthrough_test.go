package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/samples/adnetwork"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// TestAddTrendingURLsToARunningPipeline follows samples/adnetwork/README.md.
func TestAddTrendingURLsToARunningPipeline(t *testing.T) {
	dash := adnetwork.NewDashboard()
	ops := adnetwork.Operators(adnetwork.Config{ImpressionRate: 5000}, dash)
	var deploy []string
	for _, f := range ops {
		if name := f().Metadata().Name; name != "trending-urls" {
			deploy = append(deploy, name)
		}
	}
	// The walkthrough is about the CLI; it runs without checkpoints, as the
	// sample's README did before exactly-once became the default.
	rt, err := node.Start(context.Background(), node.Config{
		NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0", Deploy: deploy,
		Guarantee: sdk.NoGuarantee}, ops...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := rt.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	addr := rt.HTTPAddr()
	sluicetest.WaitFor(t, 30*time.Second, "CTR figures", func() bool { return len(dash.Top(1)) > 0 })
	if ls := mustCLI(t, addr, "ls"); strings.Contains(ls, "trending-urls") || !strings.Contains(ls, "publisher-counts") {
		t.Fatalf("ls before the deploy:\n%s", ls)
	}
	if g := mustCLI(t, addr, "graph"); !strings.Contains(g, "(no producer) → trending → dashboard") {
		t.Fatalf("graph before the deploy:\n%s", g)
	}
	if dash.Trending() != "" {
		t.Fatal("trending URLs before the deploy")
	}
	deployed := time.Now()
	if out := mustCLI(t, addr, "deploy", "-f", "../../samples/adnetwork/trending-urls.yaml"); !strings.Contains(out, "deployed trending-urls (created)") {
		t.Fatalf("deploy:\n%s", out)
	}
	sluicetest.WaitFor(t, 10*time.Second, "trending URLs on the dashboard", func() bool { return dash.Trending() != "" })
	t.Logf("trending URLs on the dashboard %v after the deploy: %s", time.Since(deployed).Round(time.Millisecond), dash.Trending())
	if g := mustCLI(t, addr, "graph"); !strings.Contains(g, "impressions → ") || !strings.Contains(g, "trending-urls [shuffle]") {
		t.Fatalf("graph after the deploy:\n%s", g)
	}
	for _, st := range rt.Status() {
		for _, in := range st.Instances {
			if in.Restarts != 0 {
				t.Errorf("%s/%d restarted", st.Name, in.Index)
			}
		}
	}
	mustCLI(t, addr, "kill", "trending-urls")
}
