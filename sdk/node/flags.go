package node

import (
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/nodeenv"
)

// RegisterNodeFlags defines the flags of a node process on fs — -id,
// -data, -consul, -cluster, -http, -bind, -advertise, -host, -host-only
// and -launch — setting c's fields, with the variables of package nodeenv
// (getenv nil: none) as defaults. Fields of c already set are the defaults
// when the variable is unset (e.g. set DataDir first for a program's own
// data directory); otherwise DataDir defaults to "sluice-data", the
// cluster name to "sluice" and the two addresses to "127.0.0.1:0". In a
// Mesos task ($MESOS_SANDBOX set) DataDir defaults to $MESOS_SANDBOX/data.
// Launchers set the same variables (package nodeenv), so a node binary
// that uses RegisterNodeFlags runs under the launcher and on Mesos.
func (c *Config) RegisterNodeFlags(fs *flag.FlagSet, getenv func(string) string) {
	env := envOf(getenv)
	c.NodeID = env(nodeenv.NodeID, env(nodeenv.MesosTaskID, c.NodeID))
	dataDir := or(c.DataDir, "sluice-data")
	if sb := env(nodeenv.MesosSandbox, ""); sb != "" {
		dataDir = filepath.Join(sb, "data")
	}
	c.DataDir = env(nodeenv.DataDir, dataDir)
	c.Consul = env(nodeenv.Consul, c.Consul)
	c.ClusterName = env(nodeenv.Cluster, or(c.ClusterName, "sluice"))
	c.HTTP = env(nodeenv.HTTP, or(c.HTTP, "127.0.0.1:0"))
	c.Bind = env(nodeenv.Bind, or(c.Bind, "127.0.0.1:0"))
	c.Advertise = env(nodeenv.Advertise, c.Advertise)
	if v := env(nodeenv.Host, ""); v != "" {
		c.Host = splitList(v)
	}
	c.HostOnly = c.HostOnly || env(nodeenv.HostOnly, "") != ""
	c.Launch = c.Launch || env(nodeenv.Launch, "") != ""
	c.KeepRunning = c.KeepRunning || env(nodeenv.KeepRunning, "") != ""

	fs.StringVar(&c.NodeID, "id", c.NodeID, "node id (default: the host name) ($"+nodeenv.NodeID+", else $"+nodeenv.MesosTaskID+")")
	fs.StringVar(&c.DataDir, "data", c.DataDir, "data directory ($"+nodeenv.DataDir+")")
	fs.StringVar(&c.Consul, "consul", c.Consul, "Consul agent address; empty: embedded, one process ($"+nodeenv.Consul+")")
	fs.StringVar(&c.ClusterName, "cluster", c.ClusterName, "cluster name, the Consul service ($"+nodeenv.Cluster+")")
	fs.StringVar(&c.HTTP, "http", c.HTTP, "control API address; empty: none ($"+nodeenv.HTTP+")")
	fs.StringVar(&c.Bind, "bind", c.Bind, "node-to-node address ($"+nodeenv.Bind+")")
	fs.StringVar(&c.Advertise, "advertise", c.Advertise, "address other nodes use to reach -bind (default: -bind's) ($"+nodeenv.Advertise+")")
	fs.Func("host", "comma-separated operator kinds this node hosts; empty: all it has ($"+nodeenv.Host+")", func(v string) error {
		c.Host = splitList(v)
		return nil
	})
	fs.BoolVar(&c.HostOnly, "host-only", c.HostOnly, "deploy nothing at start: only host the kinds, for operators deployed from manifests ($"+nodeenv.HostOnly+")")
	fs.BoolVar(&c.KeepRunning, "keep-running", c.KeepRunning, "keep running once every source finished (bounded streams); by default an embedded node then stops ($"+nodeenv.KeepRunning+")")
	fs.BoolVar(&c.Launch, "launch", c.Launch, "run a local launcher for operators deployed with an executable; needs an authenticated control API and a launch policy (docs/security.md) ($"+nodeenv.Launch+")")
	fs.Int64Var(&c.MinFreeDisk, "min-free-disk", c.MinFreeDisk, "bytes kept free on the data directory's file system: below, the node is unhealthy and takes no work until twice as much is free (0: 64 MiB; negative: no check)")
}

// RegisterGuaranteeFlags defines -guarantee, -checkpoints,
// -checkpoint-interval, -checkpoints-kept and -restore-from on fs, setting
// c's Guarantee, Checkpoints, CheckpointInterval, CheckpointsKept and
// RestoreFrom, with the
// variables of package nodeenv (getenv nil: none) as defaults. A variable
// that does not parse is an error naming it.
func (c *Config) RegisterGuaranteeFlags(fs *flag.FlagSet, getenv func(string) string) error {
	env := envOf(getenv)
	if v := env(nodeenv.Guarantee, ""); v != "" {
		g, err := sdk.ParseGuarantee(v)
		if err != nil {
			return fmt.Errorf("$%s: %w", nodeenv.Guarantee, err)
		}
		c.Guarantee = g
	}
	c.Checkpoints = env(nodeenv.Checkpoints, c.Checkpoints)
	c.RestoreFrom = env(nodeenv.RestoreFrom, c.RestoreFrom)
	if v := env(nodeenv.CheckpointInterval, ""); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("$%s: want a duration ≥ 0 such as 500ms, got %q", nodeenv.CheckpointInterval, v)
		}
		c.CheckpointInterval = d
	}
	if v := env(nodeenv.CheckpointsKept, ""); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("$%s: want a count ≥ 0, got %q", nodeenv.CheckpointsKept, v)
		}
		c.CheckpointsKept = n
	}
	fs.Func("guarantee", "what a crash may cost: exactly-once, at-least-once or none (default "+c.Guarantee.String()+"; $"+nodeenv.Guarantee+"; README \"Guarantees\")",
		func(v string) error {
			g, err := sdk.ParseGuarantee(v)
			c.Guarantee = g
			return err
		})
	fs.StringVar(&c.Checkpoints, "checkpoints", c.Checkpoints, "exactly-once checkpoint store: a directory or s3://bucket/prefix (AWS_* variables); a cluster needs one every node reaches; default under the data directory when embedded ($"+nodeenv.Checkpoints+")")
	fs.DurationVar(&c.CheckpointInterval, "checkpoint-interval", c.CheckpointInterval, "time between two checkpoints (0: 1s) ($"+nodeenv.CheckpointInterval+")")
	fs.IntVar(&c.CheckpointsKept, "checkpoints-kept", c.CheckpointsKept, "complete checkpoints kept in the store, savepoints besides (0: 3) ($"+nodeenv.CheckpointsKept+")")
	fs.StringVar(&c.RestoreFrom, "restore-from", c.RestoreFrom, "start the cluster from this checkpoint id (sluice checkpoints) rather than the newest; only the first start from it does ($"+nodeenv.RestoreFrom+")")
	return nil
}

// envOf returns a lookup of getenv (nil: none) with a default for unset
// or empty variables.
func envOf(getenv func(string) string) func(name, def string) string {
	return func(name, def string) string {
		if getenv != nil {
			if v := getenv(name); v != "" {
				return v
			}
		}
		return def
	}
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// splitList splits a comma-separated list, dropping empty items and
// spaces.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
