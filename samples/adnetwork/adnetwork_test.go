package adnetwork_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/samples/adnetwork"
	"github.com/sluicehq/sluice/sdk/node"
)

func TestPipelineComputesCTRPerPublisher(t *testing.T) {
	const imps = 20_000
	dash := adnetwork.NewDashboard()
	cfg := adnetwork.Config{ImpressionRate: 1e9, ClickRate: 1e9, Count: imps}
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}},
		adnetwork.Operators(cfg, dash)...)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(context.Background())
	// Both generators stop after Count records; once the CTR operator has
	// reported the final totals, they add up to what was generated.
	sluicetest.WaitFor(t, time.Minute, "dashboard totals to reach 2×20000", func() bool {
		var i, c int64
		for _, p := range dash.Top(100) {
			i += p.Impressions
			c += p.Clicks
		}
		return i == imps && c == imps
	})
	for _, p := range dash.Top(100) {
		if want := float64(p.Clicks) / float64(p.Impressions); p.CTR != want {
			t.Errorf("%s: CTR %v, want %v", p.Publisher, p.CTR, want)
		}
	}
	sluicetest.WaitFor(t, 10*time.Second, "trending URLs", func() bool { return dash.Trending() != "" })
}
