// Command testnode is a Sluice node hosting the deterministic test
// operators of internal/testkinds (a generator and a group-by counter),
// for the multi-process cluster tests and benchmarks. It is not for users.
//
// It writes instance and membership events as JSON lines to -events, so
// that a test can check that no instance ever ran on two nodes at once.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "testnode:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg sdk.Config
	flag.StringVar(&cfg.NodeID, "id", "", "node id")
	flag.StringVar(&cfg.DataDir, "data", "", "data directory")
	flag.StringVar(&cfg.Consul, "consul", "", "Consul address (empty: embedded)")
	flag.StringVar(&cfg.ClusterName, "cluster", "sluice", "cluster (Consul service) name")
	flag.StringVar(&cfg.HTTP, "http", "127.0.0.1:0", "control API address")
	flag.StringVar(&cfg.Bind, "bind", "127.0.0.1:0", "node-to-node address")
	records := flag.Int64("records", 1_000_000, "records the generator produces in total")
	keys := flag.Int("keys", 10_000, "distinct keys")
	rate := flag.Float64("rate", 0, "records/s per generator instance (0: unlimited)")
	genPar := flag.Int("gen-parallelism", 3, "generator instances")
	countPar := flag.Int("count-parallelism", 12, "counter instances")
	emit := flag.Bool("emit", false, "counter also produces each new count")
	events := flag.String("events", "", "file to append instance and membership events to (JSON lines)")
	level := flag.String("log-level", "info", "log level")
	flag.Parse()

	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	cfg.NoSync = true
	if *events != "" {
		f, err := os.OpenFile(*events, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		var mu sync.Mutex
		enc := json.NewEncoder(f)
		cfg.OnEvent = func(e actors.Event) {
			mu.Lock()
			defer mu.Unlock()
			_ = enc.Encode(e)
		}
	}
	ops := []sdk.Factory{
		testkinds.Gen(*records, *keys, *rate, *genPar),
		testkinds.CounterFactory(*countPar, *emit),
	}
	// Print the control API address for the test harness once started.
	rt, err := sdk.Start(context.Background(), cfg, ops...)
	if err != nil {
		return err
	}
	fmt.Printf("ready http=%s\n", rt.HTTPAddr())
	return wait(rt)
}
