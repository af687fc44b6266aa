package bench

import (
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"
)

// TableConfig sets how the table is measured.
type TableConfig struct {
	Runs    int // runs per scenario; the table shows medians
	Records int // records per word-count run
	// NodeBinary is a built internal/testnode; with ConsulAddr (a running
	// Consul agent) it enables the cross-node scenarios.
	NodeBinary string
	ConsulAddr string
	// TempDir holds the cross-node scenarios' data directories.
	TempDir string
	// Scenarios selects groups of rows: "core" (in-process throughput and
	// latency), "telemetry" (telemetry off/on), "cross" (cross-node, needs
	// NodeBinary and ConsulAddr), "mtls" (cross-node plaintext vs mutual
	// TLS, needs them too), "kafka" (Goka vs Sluice on kfake). Empty means
	// all.
	Scenarios []string
}

// want reports whether the scenario group name is selected.
func (c TableConfig) want(name string) bool {
	return len(c.Scenarios) == 0 || slices.Contains(c.Scenarios, name)
}

// row is one line of the table.
type row struct {
	name, value, unit, ratio, note string
}

// Table runs every scenario cfg.Runs times and writes the table to w,
// printing progress to w as it goes.
func Table(w io.Writer, cfg TableConfig) error {
	if cfg.Runs < 1 {
		cfg.Runs = 1
	}
	var rows []row
	measure := func(name string, run func() (Result, error)) ([]Result, error) {
		var rs []Result
		for i := 0; i < cfg.Runs; i++ {
			fmt.Fprintf(w, "  %s: run %d/%d…", name, i+1, cfg.Runs)
			r, err := run()
			if err != nil {
				fmt.Fprintln(w)
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			fmt.Fprintf(w, " %.0f/s\n", r.PerSec())
			rs = append(rs, r)
		}
		return rs, nil
	}
	medianRate := func(rs []Result) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = r.PerSec()
		}
		return Median(xs)
	}
	medianPct := func(rs []Result, p float64) time.Duration {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = float64(r.Percentile(p))
		}
		return time.Duration(Median(xs))
	}

	if cfg.want("core") {
		chain, err := measure("protoactor 3-actor chain", func() (Result, error) { return ProtoactorChain(cfg.Records) })
		if err != nil {
			return err
		}
		base := medianRate(chain)
		rows = append(rows, row{"protoactor 3-actor chain (baseline)", human(base), "msgs/s", "1.00×", "plain Send, in process"})

		wc, err := measure("sluice keyed word count", func() (Result, error) {
			return WordCount(WordCountConfig{Records: cfg.Records, Keys: 10_000})
		})
		if err != nil {
			return err
		}
		rate := medianRate(wc)
		rows = append(rows, row{"sluice keyed word count", human(rate), "records/s", fmt.Sprintf("%.2f×", rate/base),
			"source → group-by counter (Pebble) → sink, target ≥ 0.50×"})
		rows = append(rows, row{"  e2e latency p50 / p99, saturated", fmt.Sprintf("%v / %v", medianPct(wc, 50).Round(time.Microsecond), medianPct(wc, 99).Round(time.Microsecond)), "", "", "source unthrottled"})

	}
	if cfg.want("core") {
		// Exactly-once against no guarantee: runs alternate, so that drift
		// on a shared machine affects both alike.
		var none, eo []Result
		for i := 0; i < cfg.Runs; i++ {
			for _, exactly := range []bool{false, true} {
				name := "word count, no guarantee"
				if exactly {
					name = "word count, exactly-once"
				}
				fmt.Fprintf(w, "  %s: run %d/%d…", name, i+1, cfg.Runs)
				r, err := WordCount(WordCountConfig{Records: cfg.Records, Keys: 10_000, ExactlyOnce: exactly})
				if err != nil {
					fmt.Fprintln(w)
					return fmt.Errorf("%s: %w", name, err)
				}
				fmt.Fprintf(w, " %.0f/s", r.PerSec())
				if exactly {
					fmt.Fprintf(w, ", %d checkpoints", len(r.Checkpoints))
					eo = append(eo, r)
				} else {
					none = append(none, r)
				}
				fmt.Fprintln(w)
			}
		}
		noneRate, eoRate := medianRate(none), medianRate(eo)
		rows = append(rows, row{"sluice keyed word count, no guarantee (baseline)", human(noneRate), "records/s", "1.00×", "runs alternate with the next row"})
		rows = append(rows, row{"sluice keyed word count, exactly-once", human(eoRate), "records/s", fmt.Sprintf("%.2f×", eoRate/noneRate),
			"aligned checkpoints every 1 s to a directory store; target ≥ 0.90× (Kafka Streams: 0.70–0.85×)"})
		var ck []time.Duration
		for _, r := range eo {
			ck = append(ck, r.Checkpoints...)
		}
		if len(ck) > 0 {
			p50, p99 := Result{Latencies: ck}.Percentile(50), Result{Latencies: ck}.Percentile(99)
			rows = append(rows, row{"  checkpoint duration p50 / p99", fmt.Sprintf("%v / %v", p50.Round(time.Millisecond), p99.Round(time.Millisecond)), "",
				"", fmt.Sprintf("%d checkpoints over the runs, trigger to metadata written", len(ck))})
		}
	}
	if cfg.want("telemetry") {
		// Telemetry overhead: runs with telemetry off and on alternate, so that
		// drift on a shared machine affects both alike. The process's CPU time
		// per run is measured too: on a machine shared with other work it is a
		// steadier figure than the throughput.
		var telOff, telOn []Result
		var cpuOff, cpuOn []float64
		for i := 0; i < cfg.Runs; i++ {
			for _, on := range []bool{false, true} {
				wcc := WordCountConfig{Records: cfg.Records, Keys: 10_000}
				name := "word count, telemetry off"
				if on {
					wcc.Telemetry, name = TelemetryOn(), "word count, telemetry on"
				}
				fmt.Fprintf(w, "  %s: run %d/%d…", name, i+1, cfg.Runs)
				r, err := WordCount(wcc)
				if err != nil {
					fmt.Fprintln(w)
					return fmt.Errorf("%s: %w", name, err)
				}
				cpu := r.CPU.Seconds()
				fmt.Fprintf(w, " %.0f/s, %.2f s CPU\n", r.PerSec(), cpu)
				if on {
					telOn, cpuOn = append(telOn, r), append(cpuOn, cpu)
				} else {
					telOff, cpuOff = append(telOff, r), append(cpuOff, cpu)
				}
			}
		}
		offRate, onRate := medianRate(telOff), medianRate(telOn)
		rows = append(rows, row{"sluice keyed word count, telemetry off (baseline)", human(offRate), "records/s", "1.00×", "runs alternate with the next row"})
		rows = append(rows, row{"sluice keyed word count, telemetry on", human(onRate), "records/s", fmt.Sprintf("%.2f×", onRate/offRate),
			"traces 1/1000, metrics collected every 1 s, no-op exporters; target ≥ 0.95×"})
		if offCPU, onCPU := Median(cpuOff), Median(cpuOn); offCPU > 0 {
			rows = append(rows, row{"  CPU per record, telemetry on / off", fmt.Sprintf("%.2f / %.2f", onCPU*1e6/float64(cfg.Records), offCPU*1e6/float64(cfg.Records)), "µs",
				fmt.Sprintf("%.2f×", onCPU/offCPU), "process CPU time from the first record to the last; target ≤ 1.05×"})
		}

	}
	if cfg.want("core") {
		paced := 100_000.0
		wcp, err := measure("sluice keyed word count at 100k/s", func() (Result, error) {
			return WordCount(WordCountConfig{Records: min(cfg.Records, 300_000), Keys: 10_000, Rate: paced})
		})
		if err != nil {
			return err
		}
		rows = append(rows, row{"  e2e latency p50 / p99 at 100k records/s", fmt.Sprintf("%v / %v", medianPct(wcp, 50).Round(time.Microsecond), medianPct(wcp, 99).Round(time.Microsecond)), "", "", "source paced"})

	}
	if cfg.want("cross") {
		if cfg.NodeBinary != "" && cfg.ConsulAddr != "" {
			raw, err := measure("protoactor remote one-way", func() (Result, error) { return RemoteRaw(cfg.NodeBinary, cfg.Records) })
			if err != nil {
				return err
			}
			rawRate := medianRate(raw)
			rows = append(rows, row{"protoactor remote one-way (baseline)", human(rawRate), "msgs/s", "1.00×", "one record-sized message per Send, 2 processes"})
			run := 0
			cross, err := measure("sluice cross-node", func() (Result, error) {
				run++
				return CrossNode(cfg.NodeBinary, cfg.ConsulAddr, fmt.Sprintf("%s/cross-%d", cfg.TempDir, run), cfg.Records, nil)
			})
			if err != nil {
				return err
			}
			crossRate := medianRate(cross)
			rows = append(rows, row{"sluice cross-node, group-by on far node", human(crossRate), "records/s", fmt.Sprintf("%.2f×", crossRate/rawRate),
				"2 node processes via Consul, batched, target ≥ 3.00×"})
		}

	}
	if cfg.want("mtls") && cfg.NodeBinary != "" && cfg.ConsulAddr != "" {
		plain, secure, err := mtlsRuns(w, cfg)
		if err != nil {
			return err
		}
		plainRate, tlsRate := medianRate(plain), medianRate(secure)
		rows = append(rows, row{"sluice cross-node, plaintext (baseline)", human(plainRate), "records/s", "1.00×", "runs alternate with the next row"})
		rows = append(rows, row{"sluice cross-node, mutual TLS", human(tlsRate), "records/s", fmt.Sprintf("%.2f×", tlsRate/plainRate),
			"-node-ca/-node-cert/-node-key: TLS 1.3, ECDSA P-256 certificates"})
	}
	if cfg.want("kafka") {
		kafka, err := kafkaRows(w, cfg.Runs, cfg.Records)
		if err != nil {
			return err
		}
		rows = append(rows, kafka...)
	}

	fmt.Fprintf(w, "\nMedians of %d runs (ratios within this run):\n\n", cfg.Runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tmedian\tunit\tratio\tnote")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.name, r.value, r.unit, r.ratio, r.note)
	}
	return tw.Flush()
}

// human formats a rate with k/M suffixes.
func human(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// processCPU returns the CPU time (user and system) the process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mtlsRuns runs the cross-node scenario cfg.Runs times plaintext and with
// mutual TLS, alternating, so that drift on a shared machine affects both
// alike.
func mtlsRuns(w io.Writer, cfg TableConfig) (plain, secure []Result, err error) {
	dir := cfg.TempDir + "/mtls-certs"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	flags, err := NodeTLSFlags(dir, "far", "near")
	if err != nil {
		return nil, nil, err
	}
	for i := 0; i < cfg.Runs; i++ {
		for _, on := range []bool{false, true} {
			name, nf := "sluice cross-node, plaintext", func(string) []string { return nil }
			if on {
				name, nf = "sluice cross-node, mutual TLS", flags
			}
			fmt.Fprintf(w, "  %s: run %d/%d…", name, i+1, cfg.Runs)
			r, err := CrossNode(cfg.NodeBinary, cfg.ConsulAddr, fmt.Sprintf("%s/mtls-%d-%v", cfg.TempDir, i, on), cfg.Records, nf)
			if err != nil {
				fmt.Fprintln(w)
				return nil, nil, fmt.Errorf("%s: %w", name, err)
			}
			fmt.Fprintf(w, " %.0f/s\n", r.PerSec())
			if on {
				secure = append(secure, r)
			} else {
				plain = append(plain, r)
			}
		}
	}
	return plain, secure, nil
}
