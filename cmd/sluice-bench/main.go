// Command sluice-bench runs Sluice's benchmark scenarios several times and
// prints a table of medians, with each Sluice figure's ratio to its
// baseline measured in the same run.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/internal/bench"
)

func main() {
	runs := flag.Int("runs", 5, "runs per scenario (the table shows medians)")
	records := flag.Int("records", 1_000_000, "records per word-count run")
	flag.Parse()
	if err := bench.Table(os.Stdout, bench.TableConfig{Runs: *runs, Records: *records}); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-bench:", err)
		os.Exit(1)
	}
}
