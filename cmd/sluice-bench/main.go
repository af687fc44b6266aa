// Command sluice-bench runs Sluice's benchmark scenarios several times and
// prints a table of medians, with each Sluice figure's ratio to its
// baseline measured in the same run.
//
// The cross-node scenarios build internal/testnode and start a Consul dev
// agent (the binary scripts/ensure-tool.sh caches); -cross=false skips them
// (and the mtls group: cross-node plaintext vs mutual TLS). -only selects
// scenario groups, e.g. -only kafka,telemetry.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/internal/bench"
	"github.com/sluicehq/sluice/internal/consultest"
)

func main() {
	runs := flag.Int("runs", 5, "runs per scenario (the table shows medians)")
	records := flag.Int("records", 1_000_000, "records (messages) per run")
	cross := flag.Bool("cross", true, "also run the cross-node scenarios (needs Consul)")
	only := flag.String("only", "", "comma-separated scenario groups to run: core, telemetry, cross, mtls, kafka (empty: all)")
	flag.Parse()
	var groups []string
	if *only != "" {
		groups = strings.Split(*only, ",")
		for _, g := range groups {
			if !slices.Contains([]string{"core", "telemetry", "cross", "mtls", "kafka"}, g) {
				fmt.Fprintf(os.Stderr, "sluice-bench: -only: unknown scenario group %q: want core, telemetry, cross, mtls or kafka\n", g)
				os.Exit(2)
			}
		}
		*cross = *cross && (slices.Contains(groups, "cross") || slices.Contains(groups, "mtls"))
	}
	if err := run(*runs, *records, *cross, groups); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-bench:", err)
		os.Exit(1)
	}
}

func run(runs, records int, cross bool, groups []string) (err error) {
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
	cfg := bench.TableConfig{Runs: runs, Records: records, TempDir: tb.TempDir(), Scenarios: groups}
	if cross {
		cfg.NodeBinary = filepath.Join(tb.TempDir(), "testnode")
		fmt.Println("building internal/testnode…")
		build := exec.Command("go", "build", "-o", cfg.NodeBinary, "github.com/sluicehq/sluice/internal/testnode")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build testnode: %w", err)
		}
		fmt.Println("starting a Consul dev agent…")
		cfg.ConsulAddr = consultest.Start(tb).Addr()
	}
	return bench.Table(os.Stdout, cfg)
}
