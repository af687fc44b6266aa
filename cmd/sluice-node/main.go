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
	"github.com/sluicehq/sluice/sdk/node"
)

// kinds returns the operator kinds this binary hosts.
func kinds() ([]sdk.Factory, error) {
	dash := adnetwork.NewDashboard()
	windowed, err := wordcount.WindowedCountsFactory(0)
	if err != nil {
		return nil, err
	}
	return append(adnetwork.Operators(adnetwork.Config{}, dash),
		wordcount.SentenceSource(1000, 0),
		func() sdk.Operator { return wordcount.Split{} },
		func() sdk.Operator { return wordcount.Count{} },
		func() sdk.Operator { return wordcount.Top{} },
		windowed,
	), nil
}

func main() {
	var cfg node.Config
	// The control API on the CLI's default address (sluice --addr), unless
	// $SLUICE_HTTP or -http says otherwise.
	cfg.HTTP = "127.0.0.1:7070"
	cfg.RegisterNodeFlags(flag.CommandLine, os.Getenv)
	deploy := flag.String("deploy", os.Getenv("SLUICE_DEPLOY"), "comma-separated operators to deploy at first start, with their built-in settings (default: none)")
	var sec node.ControlSecurity
	var policy node.LaunchPolicy
	for _, err := range []error{sec.RegisterFlags(flag.CommandLine, os.Getenv), policy.RegisterFlags(flag.CommandLine, os.Getenv),
		cfg.RegisterGuaranteeFlags(flag.CommandLine, os.Getenv)} {
		if err != nil {
			fmt.Fprintln(os.Stderr, "sluice-node:", err)
			os.Exit(2)
		}
	}
	var nodeSec node.NodeSecurity
	nodeSec.RegisterFlags(flag.CommandLine, os.Getenv)
	list := flag.Bool("kinds", false, "list the built-in kinds and exit")
	flag.Parse()
	factories, err := kinds()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice-node:", err)
		os.Exit(2)
	}
	cfg.ControlSecurity, cfg.LaunchPolicy, cfg.NodeSecurity = &sec, &policy, &nodeSec

	if *list {
		for _, f := range factories {
			m := f().Metadata()
			fmt.Printf("%-18s inputs %v outputs %v\n", m.Name, m.Inputs, m.Outputs)
		}
		return
	}
	cfg.Deploy = []string{}
	if *deploy != "" {
		cfg.Deploy = strings.Split(*deploy, ",")
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg.StopTimeout = 60 * time.Second
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := node.Run(ctx, cfg, factories...); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-node:", err)
		os.Exit(1)
	}
}
