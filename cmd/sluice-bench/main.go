// Command sluice-bench runs Sluice's benchmark scenarios several times and
// prints a table of medians, with each Sluice figure's ratio to its
// baseline measured in the same run.
//
// The cross-node scenarios (groups cross, mtls, and scaling's node
// processes) build internal/testnode and start a Consul dev agent (the
// binary scripts/ensure-tool.sh caches); recovery builds internal/testnode
// too. -cross=false skips all of them. -only selects scenario groups, e.g.
// -only kafka,telemetry; -profile DIR writes CPU and allocation profiles of
// every run there.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/bench"
	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/natstest"
	"github.com/sluicehq/sluice/internal/pgtest"
)

func main() {
	runs := flag.Int("runs", 5, "runs per scenario (the table shows medians)")
	records := flag.Int("records", 1_000_000, "records (messages) per run")
	cross := flag.Bool("cross", true, "also run the scenarios of node processes: cross, mtls, scaling's node rows (need Consul) and recovery")
	only := flag.String("only", "", "comma-separated scenario groups to run (empty: all): "+bench.GroupsHelp)
	profile := flag.String("profile", "", "directory to write each run's CPU and allocation profiles to (<scenario>-<run>.cpu.pprof, .allocs.pprof with .allocs-base.pprof to pass as -base; node processes' as <scenario>-<run>.<node>.cpu.pprof)")
	eoRecords := flag.Int("eo-records", 10_000_000, "records per run of the exactly-once vs no-guarantee comparison")
	latencyDur := flag.Duration("latency-duration", 3*time.Second, "length of each paced latency run")
	saturated := flag.Float64("saturated", 0, "records/s the latency rows take as the word count's saturation (0: measure it); fixes the pacing when comparing two builds on a loaded machine")
	bigKeys := flag.Int("big-keys", 10_000_000, "distinct keys of the large-state scaling row (10 M: about 120 MB of state, beyond Pebble's 64 MiB block cache; 2.5 minutes on a quiet 2-core machine, more on a loaded one)")
	recoveryState := flag.Int64("recovery-state", 1<<30, "bytes of state the recovery scenario builds before its SIGKILL")
	ysbEvents := flag.Int64("ysb-events", 5_000_000, "events per unthrottled YSB run (a bounded stream)")
	ysbRate := flag.Float64("ysb-rate", 200_000, "events/s of the paced YSB window latency run (it lasts -latency-duration)")
	q5Events := flag.Int64("q5-events", 1_000_000, "events per Nexmark q5 run (100 s of event time; about 40 s a run on a loaded 2-core machine)")
	q8Events := flag.Int64("q8-events", 1_000_000, "events per Nexmark q8 run (100 s of event time)")
	nexmarkEvents := flag.Int64("nexmark-events", 10_000_000, "events per run of each query of the nexmark group (1,000 s of event time; runs must outlast several 1 s checkpoints)")
	nexmarkQueries := flag.String("nexmark-queries", "", "comma-separated queries of the nexmark group to run (empty: all), e.g. q4,q9")
	natsRecords := flag.Int("nats-records", 200_000, "messages per run of the NATS JetStream rows")
	flag.Parse()
	var groups []string
	if *only != "" {
		groups = strings.Split(*only, ",")
		for _, g := range groups {
			if !slices.Contains(bench.Groups, g) {
				fmt.Fprintf(os.Stderr, "sluice-bench: -only: unknown scenario group %q: want one of %s\n", g, strings.Join(bench.Groups, ", "))
				os.Exit(2)
			}
		}
	}
	want := func(g string) bool { return len(groups) == 0 || slices.Contains(groups, g) }
	cfg := bench.TableConfig{Runs: *runs, Records: *records, Scenarios: groups, Profile: *profile,
		EORecords: *eoRecords, LatencyDuration: *latencyDur, Saturated: *saturated, BigKeys: *bigKeys, RecoveryState: *recoveryState,
		YSBEvents: *ysbEvents, YSBRate: *ysbRate, Q5Events: *q5Events, Q8Events: *q8Events, NexmarkEvents: *nexmarkEvents, NexmarkQueries: splitList(*nexmarkQueries), NATSRecords: *natsRecords}
	needNode := *cross && (want("cross") || want("mtls") || want("scaling") || want("recovery"))
	needConsul := *cross && (want("cross") || want("mtls") || want("scaling"))
	if err := run(cfg, needNode, needConsul, want("nats"), want("postgres")); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-bench:", err)
		os.Exit(1)
	}
}

func run(cfg bench.TableConfig, node, consul, nats, pg bool) (err error) {
	tb := &harness{}
	defer tb.close()
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			err = f
		}
	}()
	cfg.TempDir = tb.TempDir()
	if node {
		cfg.NodeBinary = filepath.Join(tb.TempDir(), "testnode")
		fmt.Println("building internal/testnode…")
		build := exec.Command("go", "build", "-o", cfg.NodeBinary, "github.com/sluicehq/sluice/internal/testnode")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build testnode: %w", err)
		}
	}
	if consul {
		fmt.Println("starting a Consul dev agent…")
		cfg.ConsulAddr = consultest.Start(tb).Addr()
	}
	if nats {
		fmt.Println("starting a nats-server with JetStream…")
		cfg.NATSURL = natstest.Start(tb, natstest.Options{}).URL()
	}
	if pg {
		fmt.Println("starting a PostgreSQL server…")
		cfg.PostgresDSN = pgtest.Start(tb).DSN()
	}
	start := time.Now()
	defer func() { fmt.Printf("\nsluice-bench: %v in all\n", time.Since(start).Round(time.Second)) }()
	return bench.Table(os.Stdout, cfg)
}

// splitList splits a comma-separated flag value; empty gives none.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
