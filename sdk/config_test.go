package sdk_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/sdk"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  sdk.Config
		want []string // fields the error names; none: valid
	}{
		{"zero value", sdk.Config{}, nil},
		{"a typical node", sdk.Config{NodeConfig: sdk.NodeConfig{DataDir: "d", NoSync: true}, Consul: "127.0.0.1:8500", Bind: "0.0.0.0:7000", HTTP: ":0",
			Guarantee: sdk.AtLeastOnce, CheckpointInterval: time.Second, RestoreFrom: "12"}, nil},
		{"node fields", sdk.Config{NodeConfig: sdk.NodeConfig{BatchSize: -1, CommitInterval: -time.Second}}, []string{"Config.BatchSize", "Config.CommitInterval"}},
		{"fields Start sets", sdk.Config{NodeConfig: sdk.NodeConfig{Cluster: &actors.ClusterConfig{}, Checkpoints: &actors.CheckpointConfig{}, Announce: []string{"x"}}},
			[]string{"Config.NodeConfig.Cluster", "Config.NodeConfig.Checkpoints", "Config.NodeConfig.Announce"}},
		{"negative durations and counts", sdk.Config{StopTimeout: -1, CheckpointInterval: -1, CheckpointsKept: -1},
			[]string{"Config.StopTimeout", "Config.CheckpointInterval", "Config.CheckpointsKept"}},
		{"unknown guarantee", sdk.Config{Guarantee: sdk.Guarantee(7)}, []string{"Config.Guarantee"}},
		{"restore from no id", sdk.Config{RestoreFrom: "newest"}, []string{"Config.RestoreFrom"}},
		{"restore from 0", sdk.Config{RestoreFrom: "0"}, []string{"Config.RestoreFrom"}},
		{"addresses", sdk.Config{Bind: "7000", Advertise: "host", HTTP: "localhost"}, []string{"Config.Bind", "Config.Advertise", "Config.HTTP"}},
		{"launch on an embedded node", sdk.Config{Launch: true}, []string{"Config.Launch"}},
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
	_, err := sdk.Start(t.Context(), sdk.Config{NodeConfig: sdk.NodeConfig{DataDir: t.TempDir()}, CheckpointsKept: -2}, func() sdk.Operator { return countingSink{&atomic.Int64{}} })
	if err == nil || !strings.Contains(err.Error(), "Config.CheckpointsKept") {
		t.Fatalf("got %v, want an error naming Config.CheckpointsKept", err)
	}
}

func TestPromotedNodeFields(t *testing.T) {
	var cfg sdk.Config
	cfg.DataDir, cfg.NodeID = "d", "n"
	if cfg.NodeConfig.DataDir != "d" || cfg.NodeConfig.NodeID != "n" {
		t.Fatalf("got NodeConfig %+v, want DataDir d and NodeID n", cfg.NodeConfig)
	}
	if d := sdk.DefaultConfig(); d.DataDir != actors.DefaultConfig().DataDir || d.ClusterName != sdk.DefaultClusterName || d.StopTimeout != sdk.DefaultStopTimeout {
		t.Fatalf("DefaultConfig: got DataDir %q ClusterName %q StopTimeout %v", d.DataDir, d.ClusterName, d.StopTimeout)
	}
}
