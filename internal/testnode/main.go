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
	"runtime/pprof"
	"strings"
	"sync"

	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/telemetry"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "testnode:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg node.Config
	// Defaults come from the environment, so that a launcher (the Mesos
	// framework, a local-process launcher) can configure the node without
	// knowing its flags.
	cfg.RegisterNodeFlags(flag.CommandLine, os.Getenv)
	records := flag.Int64("records", 1_000_000, "records the generator produces in total")
	keys := flag.Int("keys", 10_000, "distinct keys")
	rate := flag.Float64("rate", 0, "records/s per generator instance (0: unlimited)")
	genPar := flag.Int("gen-parallelism", 3, "generator instances")
	countPar := flag.Int("count-parallelism", 12, "counter instances")
	emit := flag.Bool("emit", false, "counter also produces each new count")
	countCost := flag.Duration("count-cost", 0, "time the counter waits on each record (a bottleneck the autoscaler sizes)")
	countMax := flag.Int("count-max", 0, "autoscale the counter between 1 and this many instances (0: not autoscaled)")
	countDownAfter := flag.Duration("count-scale-down-after", 0, "the autoscaled counter's stabilisation window of down-scales (0: the default)")
	countCoolDown := flag.Duration("count-cool-down", 0, "the autoscaled counter's cool-down (0: the default)")
	flag.DurationVar(&cfg.Autoscale.Interval, "autoscale-interval", 0, "the autoscaler's sampling interval (0: the default)")
	flag.DurationVar(&cfg.Autoscale.Policy.Window, "autoscale-window", 0, "the autoscaler's sample window (0: the default)")
	pad := flag.Int("pad", 0, "bytes of incompressible padding the counter stores with each count (benchmarks: large state)")
	fileIn := flag.String("file-in", "", "instead of the generator, a file source \"gen\" reading this file (a record per line, keyed by the line; at most -rate lines/s), whose counts (-emit implied, decimal) a file sink \"sink\" writes to -file-out")
	fileOut := flag.String("file-out", "", "the file sink's path (with -file-in)")
	sink := flag.Bool("sink", false, "also run a third operator, \"sink\", reading the counter's output (with -emit)")
	traceSample := flag.String("trace-sample", "", "trace sampling, e.g. \"1000\" or \"1000,gen=1\"; 0 = off (empty: $SLUICE_TRACE_SAMPLE, else 1000); exporters from the OTEL_* variables")
	events := flag.String("events", "", "file to append instance and membership events to (JSON lines)")
	level := flag.String("log-level", "info", "log level")
	flag.IntVar(&cfg.BatchSize, "batch-size", 0, "records per batch between instances (0: the default)")
	flag.IntVar(&cfg.RemoteBatchSize, "remote-batch-size", 0, "records per batch to an instance on another node (0: the default)")
	flag.IntVar(&cfg.RemoteCredits, "remote-credits", 0, "unacknowledged batches per destination on another node (0: the default)")
	flag.DurationVar(&cfg.Settle, "settle", 0, "delay before acting on a membership change (0: the default, 200ms); a long one makes this node see a crash after the others")
	cfg.Guarantee = sdk.NoGuarantee // the tests choose; sdk's default is exactly-once
	if err := cfg.RegisterGuaranteeFlags(flag.CommandLine, os.Getenv); err != nil {
		return err
	}
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile to this file until the node stops")
	memProfile := flag.String("memprofile", "", "write an allocation profile to this file when the node stops")
	var nodeSec node.NodeSecurity // -node-*, $SLUICE_NODE_*: mutual TLS between nodes
	nodeSec.RegisterFlags(flag.CommandLine, os.Getenv)
	cfg.NodeSecurity = &nodeSec
	rawSink := flag.Int64("raw-sink", 0, "benchmark mode: instead of a node, run a bare protoactor remote on -bind with an actor \"sink\" that counts this many messages, then prints \"done\"")
	rawSend := flag.Int64("raw-send", 0, "benchmark mode: instead of a node, run a bare protoactor remote that sends this many messages to the actor \"sink\" at -raw-to once it reads \"go\" on stdin")
	rawTo := flag.String("raw-to", "", "with -raw-send: the address (HOST:PORT) of the -raw-sink process")
	flag.Parse()
	if err := applyEnvInts(); err != nil {
		return err
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		defer writeAllocs(*memProfile)
	}
	if *rawSink > 0 {
		return runRawSink(cfg.Bind, *rawSink)
	}
	if *rawSend > 0 {
		return runRawSend(*rawTo, *rawSend)
	}
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
		cfg.OnEvent = func(e status.Event) {
			mu.Lock()
			defer mu.Unlock()
			_ = enc.Encode(e)
		}
	}
	counter := testkinds.Counter{Parallelism: *countPar, Emit: *emit, Pad: *pad, Cost: *countCost}
	if *countMax > 0 {
		counter.Autoscale = &sdk.AutoscaleSpec{Min: 1, Max: *countMax, ScaleDownAfter: *countDownAfter, CoolDown: *countCoolDown}
	}
	ops := []sdk.Factory{
		testkinds.Gen(*records, *keys, *rate, *genPar),
		func() sdk.Operator { return counter },
	}
	if *sink {
		ops = append(ops, testkinds.SinkFactory(2))
	}
	if *fileIn != "" {
		var err error
		if ops, err = fileOps(*fileIn, *fileOut, *rate, counter); err != nil {
			return err
		}
	}
	tc, err := node.TelemetryFromEnv()
	if err != nil {
		return err
	}
	if *traceSample != "" {
		if tc.Sampling, err = telemetry.ParseSampling(*traceSample); err != nil {
			return fmt.Errorf("-trace-sample: %w", err)
		}
	}
	cfg.Telemetry = &tc
	// Print the control API address for the test harness once started.
	rt, err := node.Start(context.Background(), cfg, ops...)
	if err != nil {
		return err
	}
	fmt.Printf("ready http=%s\n", rt.HTTPAddr())
	return wait(rt)
}

// writeAllocs writes the allocation profile to path (-memprofile).
func writeAllocs(path string) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testnode: -memprofile:", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, "testnode: -memprofile:", err)
	}
}

// applyEnvInts sets flags not given on the command line from
// SLUICE_TEST_<FLAG> variables (e.g. SLUICE_TEST_RECORDS), for launchers
// that pass only an environment.
func applyEnvInts() error {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	flag.VisitAll(func(f *flag.Flag) {
		name := "SLUICE_TEST_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := os.Getenv(name); v != "" && !set[f.Name] && err == nil {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %w", name, v, e)
			}
		}
	})
	return err
}
