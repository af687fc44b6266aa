// Command adnetwork runs the ad-network sample on the embedded runtime and
// prints a line of progress every second: records per second, the CTR of
// the busiest publishers and the trending URLs. It stops on Ctrl-C, or
// after -duration (or $DURATION) if set.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/samples/adnetwork"
	"github.com/sluicehq/sluice/sdk/node"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "adnetwork:", err)
		os.Exit(1)
	}
}

func run() error {
	dataDir := flag.String("data", "sluice-data/adnetwork", "directory of the node's state database")
	rate := flag.Float64("rate", 20000, "impressions per second")
	duration := flag.Duration("duration", 0, "stop after this long (0: run until Ctrl-C); defaults to $DURATION")
	consulAddr := flag.String("consul", "", "Consul address: join the cluster of all processes started with it (empty: run everything here)")
	id := flag.String("id", "", "node id in the cluster (default: host name)")
	httpAddr := flag.String("http", "", "control API address, e.g. 127.0.0.1:0")
	bind := flag.String("bind", "", "node-to-node address (default 127.0.0.1:0)")
	without := flag.String("without", "", "comma-separated operators not to deploy at first start (deploy them later with sluice deploy)")
	var cfg node.Config // -guarantee, -checkpoints…: what a crash may cost (README "Guarantees")
	if err := cfg.RegisterGuaranteeFlags(flag.CommandLine, os.Getenv); err != nil {
		return err
	}
	var sec node.ControlSecurity // -control-*: who may use the control API (docs/security.md)
	if err := sec.RegisterFlags(flag.CommandLine, os.Getenv); err != nil {
		return err
	}
	var nodeSec node.NodeSecurity // -node-*: mutual TLS between nodes (docs/security.md)
	nodeSec.RegisterFlags(flag.CommandLine, os.Getenv)
	flag.Parse()
	if *duration == 0 && os.Getenv("DURATION") != "" {
		d, err := time.ParseDuration(os.Getenv("DURATION"))
		if err != nil {
			return fmt.Errorf("bad DURATION %q: %w", os.Getenv("DURATION"), err)
		}
		*duration = d
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dash := adnetwork.NewDashboard()
	ops := adnetwork.Operators(adnetwork.Config{ImpressionRate: *rate}, dash)
	var deploy []string // nil: all
	if *without != "" {
		skip := strings.Split(*without, ",")
		deploy = []string{}
		for _, f := range ops {
			if name := f().Metadata().Name; !slices.Contains(skip, name) {
				deploy = append(deploy, name)
			}
		}
	}
	cfg.DataDir, cfg.Logger, cfg.Consul, cfg.NodeID, cfg.HTTP, cfg.Bind, cfg.Deploy = *dataDir, logger, *consulAddr, *id, *httpAddr, *bind, deploy
	cfg.ControlSecurity, cfg.NodeSecurity = &sec, &nodeSec
	rt, err := node.Start(ctx, cfg, ops...)
	if err != nil {
		return err
	}
	if *consulAddr == "" {
		fmt.Printf("adnetwork: running on the embedded runtime, state in %s (Ctrl-C to stop)\n", *dataDir)
		if addr := rt.HTTPAddr(); addr != "" {
			fmt.Printf("adnetwork: control API on %s (sluice --addr %s ls)\n", addr, addr)
			fmt.Printf("adnetwork: web console on %s\n", rt.ConsoleURL())
		}
	} else {
		fmt.Printf("adnetwork: node %s joined the cluster through Consul at %s, state in %s, control API %s, web console %s (Ctrl-C to leave)\n",
			rt.Node().ID(), *consulAddr, *dataDir, rt.HTTPAddr(), rt.ConsoleURL())
	}

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, lastAt := counted(rt), time.Now()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case now := <-tick.C:
			n := counted(rt)
			fmt.Println(progress(float64(n-last)/now.Sub(lastAt).Seconds(), dash))
			last, lastAt = n, now
		}
	}
	fmt.Println("adnetwork: stopping")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return rt.Stop(sctx)
}

// counted returns the records processed by publisher-counts so far (by the
// instances in this process).
func counted(rt *node.Runtime) int64 {
	var n int64
	for _, op := range rt.Status() {
		if op.Name == "publisher-counts" {
			for _, in := range op.Instances {
				n += in.Processed
			}
		}
	}
	return n
}

func progress(perSec float64, d *adnetwork.Dashboard) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %8.0f records/s  CTR", time.Now().Format("15:04:05"), perSec)
	for _, p := range d.Top(4) {
		fmt.Fprintf(&b, " %s=%.2f%%", p.Publisher, 100*p.CTR)
	}
	if t := d.Trending(); t != "" {
		fmt.Fprintf(&b, "  trending %s", t)
	}
	return b.String()
}
