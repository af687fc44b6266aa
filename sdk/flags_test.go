package sdk_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// TestGuaranteeFlags: the SLUICE_* variables are the defaults, flags
// override them, and a variable that does not parse is an error naming it.
func TestGuaranteeFlags(t *testing.T) {
	env := map[string]string{
		sdk.EnvGuarantee: "at-least-once", sdk.EnvCheckpoints: "s3://b/p",
		sdk.EnvCheckpointInterval: "250ms", sdk.EnvCheckpointsKept: "5",
	}
	var cfg sdk.Config
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
	if err := (&sdk.Config{}).RegisterGuaranteeFlags(fs, nil); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"-guarantee", "twice"}); err == nil || !strings.Contains(err.Error(), "exactly-once, at-least-once or none") {
		t.Fatalf("-guarantee twice: %v", err)
	}
	for k, v := range map[string]string{sdk.EnvGuarantee: "maybe", sdk.EnvCheckpointInterval: "soon", sdk.EnvCheckpointsKept: "-1"} {
		err := (&sdk.Config{}).RegisterGuaranteeFlags(flag.NewFlagSet("node", flag.ContinueOnError), func(name string) string {
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
