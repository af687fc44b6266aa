package mesos

import (
	"slices"

	"github.com/sluicehq/sluice/topology"
	tconsul "github.com/sluicehq/sluice/topology/consul"

	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// The command line of the scheduler, shared by cmd/sluice-mesos and any
// command that embeds it (e.g. a `sluice mesos` subcommand).

// roles is a repeatable --role flag.
type roles []string

func (r *roles) String() string { return strings.Join(*r, ",") }
func (r *roles) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*r = append(*r, s)
		}
	}
	return nil
}

// Main is the sluice-mesos command (and `sluice mesos`): it parses args
// (flags, with SLUICE_MESOS_<FLAG> environment fallbacks), reads the
// secret and pools files, and runs a Scheduler until ctx ends. Each value
// received on reload re-reads the pools file. Logs go to stderr. It
// returns flag.ErrHelp for -h.
func Main(ctx context.Context, args []string, reload <-chan struct{}) error {
	cfg, poolsFile, err := parseArgs(args)
	if err != nil {
		return err
	}
	fromTopology := slices.Contains(args, "--from-topology") || slices.Contains(args, "-from-topology")
	s, err := New(cfg)
	if err != nil {
		return err
	}
	var filePools []Pool
	load := func() error {
		if poolsFile == "" {
			return nil
		}
		b, err := os.ReadFile(poolsFile)
		if err != nil {
			return fmt.Errorf("--pools: %w", err)
		}
		pools, err := ParsePools(b)
		if err != nil {
			return fmt.Errorf("--pools %s: %w", poolsFile, err)
		}
		filePools = pools
		if fromTopology {
			return nil // the topology watcher combines them
		}
		return s.SetPools(pools)
	}
	if err := load(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	if fromTopology {
		backend, err := tconsul.New(cfg.Consul, cfg.Cluster, cfg.Logger)
		if err != nil {
			return err
		}
		// Guarded: a Consul that lost its data must not make the scheduler
		// drop every operator's tasks.
		store, err := topology.NewGuard(backend, &topology.MemoryCopy{}, cfg.Logger)
		if err != nil {
			return err
		}
		go s.WatchTopology(ctx, store, filePools)
	}
	for {
		select {
		case err := <-done:
			return err
		case <-reload:
			if err := load(); err != nil {
				cfg.Logger.Error("reloading pools; keeping the previous ones", "err", err)
			} else {
				cfg.Logger.Info("pools reloaded", "file", poolsFile)
			}
		}
	}
}

// parseArgs returns the configuration and the pools file named by args and
// the environment.
func parseArgs(args []string) (Config, string, error) {
	cfg := DefaultConfig()
	var (
		rs            roles
		secretFile    string
		nodeTokenFile string
		poolsFile     string
		level         string
	)
	fs := flag.NewFlagSet("sluice-mesos", flag.ContinueOnError)
	fs.Bool("from-topology", false, "also launch a pool for every deployed operator whose manifest names an executable (the Mesos launcher)")
	fs.StringVar(&cfg.Master, "master", "", "Mesos master URL, http://HOST:5050 (several: comma-separated)")
	fs.StringVar(&cfg.Consul, "consul", cfg.Consul, "Consul address for leader election and state ($SLUICE_CONSUL)")
	fs.StringVar(&cfg.NodeConsul, "node-consul", "", "Consul address given to the nodes (default: --consul)")
	fs.StringVar(&cfg.Cluster, "cluster", cfg.Cluster, "Sluice cluster name ($SLUICE_CLUSTER)")
	fs.StringVar(&cfg.ID, "id", cfg.ID, "this scheduler's ID in status and election")
	fs.StringVar(&cfg.Name, "name", cfg.Name, "framework name")
	fs.StringVar(&cfg.User, "user", cfg.User, "user the tasks run as")
	fs.Var(&rs, "role", "framework role (repeatable, or comma-separated)")
	fs.StringVar(&cfg.Principal, "principal", "", "framework principal")
	fs.StringVar(&secretFile, "secret-file", "", "file holding the principal's secret")
	fs.DurationVar(&cfg.FailoverTimeout, "failover-timeout", cfg.FailoverTimeout, "how long Mesos keeps the tasks while no scheduler is subscribed")
	fs.BoolVar(&cfg.Checkpoint, "checkpoint", cfg.Checkpoint, "ask agents to checkpoint tasks (they survive agent restarts)")
	fs.StringVar(&cfg.Encoding, "encoding", cfg.Encoding, "scheduler API encoding: protobuf or json")
	fs.BoolVar(&cfg.GPUResources, "gpu-resources", false, "declare GPU_RESOURCES, for pools with gpus")
	fs.StringVar(&poolsFile, "pools", "", "YAML or JSON file with the list of node pools (SIGHUP reloads it)")
	fs.StringVar(&cfg.NodeBinary, "node-binary", "", "URI of the node executable, for pools without a command")
	fs.DurationVar(&cfg.KillGracePeriod, "kill-grace", cfg.KillGracePeriod, "SIGTERM to SIGKILL delay when a node task is killed")
	fs.StringVar(&cfg.HTTP, "http", "", "address for GET /v1/mesos/status (e.g. :8095)")
	fs.StringVar(&level, "log-level", "info", "log level: debug, info, warn, error")
	fs.DurationVar(&cfg.SessionTTL, "session-ttl", cfg.SessionTTL, "Consul session TTL of the leader lock")
	fs.DurationVar(&cfg.LockDelay, "lock-delay", cfg.LockDelay, "Consul lock-delay of the leader lock (at least session-ttl/2)")
	fs.DurationVar(&cfg.MasterTimeout, "master-timeout", cfg.MasterTimeout, "a leader without a subscription to any master for this long steps down")
	fs.DurationVar(&cfg.RelaunchBackoffMin, "relaunch-backoff-min", cfg.RelaunchBackoffMin, "first relaunch delay after a task failure")
	fs.DurationVar(&cfg.RelaunchBackoffMax, "relaunch-backoff-max", cfg.RelaunchBackoffMax, "maximum relaunch delay")
	fs.DurationVar(&cfg.SubscribeBackoffMin, "subscribe-backoff-min", cfg.SubscribeBackoffMin, "first delay after a failed subscription")
	fs.DurationVar(&cfg.SubscribeBackoffMax, "subscribe-backoff-max", cfg.SubscribeBackoffMax, "maximum delay between subscription attempts")
	fs.DurationVar(&cfg.ReconcileInterval, "reconcile-interval", cfg.ReconcileInterval, "period of full task reconciliation")
	fs.DurationVar(&cfg.ReconcileRetryMin, "reconcile-retry-min", cfg.ReconcileRetryMin, "first delay before asking the master again about a task it did not answer about")
	fs.DurationVar(&cfg.ReconcileRetry, "reconcile-retry", cfg.ReconcileRetry, "maximum delay before asking again about an unanswered task (the backoff doubles up to it)")
	fs.DurationVar(&cfg.DeclineRefuse, "decline-refuse", cfg.DeclineRefuse, "refuse filter of declined offers while tasks are pending")
	fs.DurationVar(&cfg.StatusInterval, "status-interval", cfg.StatusInterval, "period of status publication to Consul")
	fs.DurationVar(&cfg.NodeScaleInterval, "node-scale-interval", cfg.NodeScaleInterval, "period of the autoscaled pool's decisions")
	fs.StringVar(&cfg.NodeCA, "node-ca", "", "PEM file of the CA of the nodes' control API certificates: ask them over https")
	fs.StringVar(&nodeTokenFile, "node-token-file", "", "file holding an admin token of the nodes' control API, to read their node recommendation and drain them")
	if err := fs.Parse(args); err != nil {
		return cfg, "", err
	}
	if fs.NArg() > 0 {
		return cfg, "", fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := applyEnv(fs, map[string]string{"consul": "SLUICE_CONSUL", "cluster": "SLUICE_CLUSTER"}); err != nil {
		return cfg, "", err
	}
	cfg.Roles = rs
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return cfg, "", fmt.Errorf("--log-level: %w", err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	if nodeTokenFile != "" {
		b, err := os.ReadFile(nodeTokenFile)
		if err != nil {
			return cfg, "", fmt.Errorf("--node-token-file: %w", err)
		}
		cfg.NodeToken = strings.TrimSpace(string(b))
	}
	if secretFile != "" {
		b, err := os.ReadFile(secretFile)
		if err != nil {
			return cfg, "", fmt.Errorf("--secret-file: %w", err)
		}
		cfg.Secret = strings.TrimSpace(string(b))
	}
	return cfg, poolsFile, nil
}

// applyEnv sets every flag not given on the command line from
// SLUICE_MESOS_<FLAG>, else from the alias in extra.
func applyEnv(fs *flag.FlagSet, extra map[string]string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		name := "SLUICE_MESOS_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		v, ok := os.LookupEnv(name)
		if !ok && extra[f.Name] != "" {
			name = extra[f.Name]
			v, ok = os.LookupEnv(name)
		}
		if ok && v != "" {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
			}
		}
	})
	return errors.Join(errs...)
}
