package node_test

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/sdk/nodeenv"
)

// TestGuaranteeFlags: the SLUICE_* variables are the defaults, flags
// override them, and a variable that does not parse is an error naming it.
func TestGuaranteeFlags(t *testing.T) {
	env := map[string]string{
		nodeenv.Guarantee: "at-least-once", nodeenv.Checkpoints: "s3://b/p",
		nodeenv.CheckpointInterval: "250ms", nodeenv.CheckpointsKept: "5",
	}
	var cfg node.Config
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	if err := cfg.RegisterGuaranteeFlags(fs, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if cfg.Guarantee != sdk.AtLeastOnce || cfg.Checkpoints != "s3://b/p" || cfg.CheckpointInterval != 250*time.Millisecond || cfg.CheckpointsKept != 5 {
		t.Fatalf("from the environment: %v %q %v %d", cfg.Guarantee, cfg.Checkpoints, cfg.CheckpointInterval, cfg.CheckpointsKept)
	}
	if err := fs.Parse([]string{"-guarantee", "exactly-once", "-checkpoints", "/shared/ck", "-checkpoint-interval", "2s"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Guarantee != sdk.ExactlyOnce || cfg.Checkpoints != "/shared/ck" || cfg.CheckpointInterval != 2*time.Second {
		t.Fatalf("from flags: %v %q %v", cfg.Guarantee, cfg.Checkpoints, cfg.CheckpointInterval)
	}

	fs = flag.NewFlagSet("node", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := (&node.Config{}).RegisterGuaranteeFlags(fs, nil); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"-guarantee", "twice"}); err == nil || !strings.Contains(err.Error(), "exactly-once, at-least-once or none") {
		t.Fatalf("-guarantee twice: %v", err)
	}
	for k, v := range map[string]string{nodeenv.Guarantee: "maybe", nodeenv.CheckpointInterval: "soon", nodeenv.CheckpointsKept: "-1"} {
		err := (&node.Config{}).RegisterGuaranteeFlags(flag.NewFlagSet("node", flag.ContinueOnError), func(name string) string {
			if name == k {
				return v
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Fatalf("%s=%s: %v, want an error naming it", k, v, err)
		}
	}
}

// TestNodeFlags: the nodeenv variables are the defaults (MESOS_TASK_ID
// when SLUICE_NODE_ID is unset), fields set before are the defaults when
// a variable is unset, and flags override both.
func TestNodeFlags(t *testing.T) {
	env := map[string]string{
		nodeenv.MesosTaskID: "pool.0.abc", nodeenv.Consul: "127.0.0.1:8500", nodeenv.Host: "count, split,",
		nodeenv.HostOnly: "1", nodeenv.Bind: "10.0.0.1:31000",
	}
	cfg := node.Config{NodeConfig: node.NodeConfig{DataDir: "sluice-data/mine"}, HTTP: "127.0.0.1:7070"}
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	cfg.RegisterNodeFlags(fs, func(k string) string { return env[k] })
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if cfg.NodeID != "pool.0.abc" || cfg.Consul != "127.0.0.1:8500" || !slices.Equal(cfg.Host, []string{"count", "split"}) || !cfg.HostOnly ||
		cfg.Bind != "10.0.0.1:31000" || cfg.DataDir != "sluice-data/mine" || cfg.HTTP != "127.0.0.1:7070" || cfg.ClusterName != "sluice" || cfg.Launch {
		t.Fatalf("from the environment and the program's defaults: %+v", cfg)
	}
	if err := fs.Parse([]string{"-id", "n1", "-data", "/d", "-http", "", "-host", "top", "-launch"}); err != nil {
		t.Fatal(err)
	}
	if cfg.NodeID != "n1" || cfg.DataDir != "/d" || cfg.HTTP != "" || !slices.Equal(cfg.Host, []string{"top"}) || !cfg.Launch {
		t.Fatalf("from flags: %+v", cfg)
	}
	env[nodeenv.NodeID] = "n2"
	var fresh node.Config
	fresh.RegisterNodeFlags(flag.NewFlagSet("node", flag.ContinueOnError), func(k string) string { return env[k] })
	if fresh.NodeID != "n2" || fresh.DataDir != "sluice-data" || fresh.HTTP != "127.0.0.1:0" {
		t.Fatalf("SLUICE_NODE_ID over MESOS_TASK_ID, built-in defaults: %+v", fresh)
	}
}
