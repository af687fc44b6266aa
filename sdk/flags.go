package sdk

import (
	"flag"
	"fmt"
	"strconv"
	"time"
)

// The environment variables RegisterGuaranteeFlags reads, so that a node
// launched by a scheduler (Mesos, systemd, a container) is configured
// without flags.
const (
	EnvGuarantee          = "SLUICE_GUARANTEE"
	EnvCheckpoints        = "SLUICE_CHECKPOINTS"
	EnvCheckpointInterval = "SLUICE_CHECKPOINT_INTERVAL"
	EnvCheckpointsKept    = "SLUICE_CHECKPOINTS_KEPT"
)

// RegisterGuaranteeFlags defines -guarantee, -checkpoints,
// -checkpoint-interval and -checkpoints-kept on fs, setting c's
// Guarantee, Checkpoints, CheckpointInterval and CheckpointsKept, with the
// SLUICE_GUARANTEE, SLUICE_CHECKPOINTS, SLUICE_CHECKPOINT_INTERVAL and
// SLUICE_CHECKPOINTS_KEPT variables (getenv nil: none) as defaults. A
// variable that does not parse is an error naming it.
func (c *Config) RegisterGuaranteeFlags(fs *flag.FlagSet, getenv func(string) string) error {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if v := getenv(EnvGuarantee); v != "" {
		g, err := ParseGuarantee(v)
		if err != nil {
			return fmt.Errorf("$%s: %w", EnvGuarantee, err)
		}
		c.Guarantee = g
	}
	if v := getenv(EnvCheckpoints); v != "" {
		c.Checkpoints = v
	}
	if v := getenv(EnvCheckpointInterval); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("$%s: want a duration ≥ 0 such as 500ms, got %q", EnvCheckpointInterval, v)
		}
		c.CheckpointInterval = d
	}
	if v := getenv(EnvCheckpointsKept); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("$%s: want a count ≥ 0, got %q", EnvCheckpointsKept, v)
		}
		c.CheckpointsKept = n
	}
	fs.Func("guarantee", "what a crash may cost: exactly-once, at-least-once or none (default "+c.Guarantee.String()+"; $"+EnvGuarantee+"; README \"Guarantees\")",
		func(v string) error {
			g, err := ParseGuarantee(v)
			c.Guarantee = g
			return err
		})
	fs.StringVar(&c.Checkpoints, "checkpoints", c.Checkpoints, "exactly-once checkpoint store: a directory or s3://bucket/prefix (AWS_* variables); a cluster needs one every node reaches; default under the data directory when embedded ($"+EnvCheckpoints+")")
	fs.DurationVar(&c.CheckpointInterval, "checkpoint-interval", c.CheckpointInterval, "time between two checkpoints (0: 1s) ($"+EnvCheckpointInterval+")")
	fs.IntVar(&c.CheckpointsKept, "checkpoints-kept", c.CheckpointsKept, "complete checkpoints kept in the store (0: 3) ($"+EnvCheckpointsKept+")")
	return nil
}
