// Command sluice-node runs a Sluice node hosting the operator kinds built
// into it (the samples' operators), ready for operators to be deployed on
// it with "sluice deploy". Alone it is an embedded node; with -consul it
// joins a cluster.
//
// Every flag has an environment fallback (SLUICE_*), so launchers (the
// Mesos framework, the local launcher) configure it through the
// environment. The control API's security (-control-*, SLUICE_CONTROL_*),
// mutual TLS between nodes (-node-ca, -node-cert, -node-key,
// SLUICE_NODE_*) and the launcher's policy (-launch-*, SLUICE_LAUNCH_*)
// are described in docs/security.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/samples/adnetwork"
	"github.com/sluicehq/sluice/samples/wordcount"
	"github.com/sluicehq/sluice/sdk"
)

// kinds returns the operator kinds this binary hosts.
func kinds() []sdk.Factory {
	dash := adnetwork.NewDashboard()
	return append(adnetwork.Operators(adnetwork.Config{}, dash),
		wordcount.SentenceSource(1000, 0),
		func() sdk.Operator { return wordcount.Split{} },
		func() sdk.Operator { return wordcount.Count{} },
		func() sdk.Operator { return wordcount.Top{} },
	)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func main() {
	var cfg sdk.Config
	flag.StringVar(&cfg.NodeID, "id", envOr("SLUICE_NODE_ID", os.Getenv("MESOS_TASK_ID")), "node id ($SLUICE_NODE_ID; default: host name)")
	flag.StringVar(&cfg.DataDir, "data", envOr("SLUICE_DATA_DIR", "sluice-data"), "data directory ($SLUICE_DATA_DIR)")
	flag.StringVar(&cfg.Consul, "consul", os.Getenv("SLUICE_CONSUL"), "Consul address; empty: embedded ($SLUICE_CONSUL)")
	flag.StringVar(&cfg.ClusterName, "cluster", envOr("SLUICE_CLUSTER", "sluice"), "cluster name ($SLUICE_CLUSTER)")
	flag.StringVar(&cfg.HTTP, "http", envOr("SLUICE_HTTP", "127.0.0.1:7070"), "control API address ($SLUICE_HTTP)")
	flag.StringVar(&cfg.Bind, "bind", envOr("SLUICE_BIND", "127.0.0.1:0"), "node-to-node address ($SLUICE_BIND)")
	flag.StringVar(&cfg.Advertise, "advertise", os.Getenv("SLUICE_ADVERTISE"), "address other nodes use to reach -bind ($SLUICE_ADVERTISE)")
	host := flag.String("host", os.Getenv("SLUICE_HOST"), "comma-separated kinds to host (default: all built in)")
	deploy := flag.String("deploy", os.Getenv("SLUICE_DEPLOY"), "comma-separated operators to deploy at first start, with their built-in settings (default: none)")
	flag.BoolVar(&cfg.Launch, "launch", os.Getenv("SLUICE_LAUNCH") != "", "run a local launcher for operators deployed with an executable; needs -control-tokens-file or -control-cert-roles, and -launch-allow or -launch-dir ($SLUICE_LAUNCH)")
	var sec sdk.ControlSecurity
	var policy sdk.LaunchPolicy
	for _, err := range []error{sec.RegisterFlags(flag.CommandLine, os.Getenv), policy.RegisterFlags(flag.CommandLine, os.Getenv)} {
		if err != nil {
			fmt.Fprintln(os.Stderr, "sluice-node:", err)
			os.Exit(2)
		}
	}
	var nodeSec sdk.NodeSecurity
	nodeSec.RegisterFlags(flag.CommandLine, os.Getenv)
	list := flag.Bool("kinds", false, "list the built-in kinds and exit")
	flag.Parse()
	cfg.ControlSecurity, cfg.LaunchPolicy, cfg.NodeSecurity = &sec, &policy, &nodeSec

	if *list {
		for _, f := range kinds() {
			m := f().Metadata()
			fmt.Printf("%-18s inputs %v outputs %v\n", m.Name, m.Inputs, m.Outputs)
		}
		return
	}
	if *host != "" {
		cfg.Host = strings.Split(*host, ",")
	}
	cfg.Deploy = []string{}
	if *deploy != "" {
		cfg.Deploy = strings.Split(*deploy, ",")
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg.StopTimeout = 60 * time.Second
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := sdk.Run(ctx, cfg, kinds()...); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-node:", err)
		os.Exit(1)
	}
}
