package node_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  node.Config
		want []string // fields the error names; none: valid
	}{
		{"zero value", node.Config{}, nil},
		{"a typical node", node.Config{NodeConfig: node.NodeConfig{DataDir: "d", NoSync: true}, Consul: "127.0.0.1:8500", Bind: "0.0.0.0:7000", HTTP: ":0",
			Guarantee: sdk.AtLeastOnce, CheckpointInterval: time.Second, RestoreFrom: "12"}, nil},
		{"node fields", node.Config{NodeConfig: node.NodeConfig{BatchSize: -1, CommitInterval: -time.Second}}, []string{"Config.BatchSize", "Config.CommitInterval"}},
		{"negative durations and counts", node.Config{StopTimeout: -1, CheckpointInterval: -1, CheckpointsKept: -1},
			[]string{"Config.StopTimeout", "Config.CheckpointInterval", "Config.CheckpointsKept"}},
		{"unknown guarantee", node.Config{Guarantee: sdk.Guarantee(7)}, []string{"Config.Guarantee"}},
		{"restore from no id", node.Config{RestoreFrom: "newest"}, []string{"Config.RestoreFrom"}},
		{"restore from 0", node.Config{RestoreFrom: "0"}, []string{"Config.RestoreFrom"}},
		{"addresses", node.Config{Bind: "7000", Advertise: "host", HTTP: "localhost"}, []string{"Config.Bind", "Config.Advertise", "Config.HTTP"}},
		{"launch on an embedded node", node.Config{Launch: true}, []string{"Config.Launch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got no error, want one naming %v", tc.want)
			}
			for _, f := range tc.want {
				if !strings.Contains(err.Error(), f+" ") && !strings.Contains(err.Error(), f+":") {
					t.Errorf("got %q, want it to name %s", err, f)
				}
			}
		})
	}
}

func TestStartRefusesAnInvalidConfig(t *testing.T) {
	_, err := node.Start(t.Context(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir()}, CheckpointsKept: -2}, func() sdk.Operator { return countingSink{&atomic.Int64{}} })
	if err == nil || !strings.Contains(err.Error(), "Config.CheckpointsKept") {
		t.Fatalf("got %v, want an error naming Config.CheckpointsKept", err)
	}
}

func TestPromotedNodeFields(t *testing.T) {
	var cfg node.Config
	cfg.DataDir, cfg.NodeID = "d", "n"
	if cfg.NodeConfig.DataDir != "d" || cfg.NodeConfig.NodeID != "n" {
		t.Fatalf("got NodeConfig %+v, want DataDir d and NodeID n", cfg.NodeConfig)
	}
	if d := node.DefaultConfig(); d.DataDir != actors.DefaultConfig().DataDir || d.ClusterName != node.DefaultClusterName || d.StopTimeout != node.DefaultStopTimeout {
		t.Fatalf("DefaultConfig: got DataDir %q ClusterName %q StopTimeout %v", d.DataDir, d.ClusterName, d.StopTimeout)
	}
}
