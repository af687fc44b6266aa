package node_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// RestoreFrom must name a complete checkpoint: anything else fails the
// start, saying which.
func TestRestoreFromNamesACheckpoint(t *testing.T) {
	sink := func() sdk.Operator { return countingSink{n: &atomic.Int64{}} }
	for _, tc := range []struct{ from, want string }{
		{"latest", `Config.RestoreFrom: "latest" is not a checkpoint id`},
		{"12345", "restore from checkpoint 12345: checkpoint: no such complete checkpoint"},
	} {
		rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, RestoreFrom: tc.from}, sink)
		if err == nil {
			_ = rt.Stop(context.Background())
			t.Fatalf("RestoreFrom %q started", tc.from)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("RestoreFrom %q: %v; want it to say %q", tc.from, err, tc.want)
		}
	}
}
