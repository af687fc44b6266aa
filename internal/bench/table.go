package bench

import (
	"fmt"
	"io"
	"os"
	"runtime"
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
	// PostgresDSN is the PostgreSQL server of the postgres group.
	PostgresDSN string
	// TempDir holds the cross-node scenarios' data directories.
	TempDir string
	// Scenarios selects groups of rows (Groups lists them). Empty means
	// all.
	Scenarios []string
	// Profile, when set, is a directory where every scenario run writes
	// CPU and allocation profiles (see profiler).
	Profile string
	// EORecords is the records per run of the exactly-once vs no-guarantee
	// comparison; 0 means 10 M (several seconds, several checkpoints).
	EORecords int
	// LatencyDuration is how long each paced latency run lasts; 0 means
	// 3 s.
	LatencyDuration time.Duration
	// Saturated is the keyed word count's saturated rate (records/s) the
	// latency rows pace from; 0 means measured (the core group's median,
	// or a run of the latency group's own). Set, it keeps the pacing
	// equal when comparing two builds on a loaded machine.
	Saturated float64
	// BigKeys is the number of distinct keys of the large-state scaling
	// row; 0 means 10 M (see scalingRows).
	BigKeys int
	// RecoveryState is the state the recovery scenario builds before the
	// SIGKILL, in bytes; 0 means 1 GiB.
	RecoveryState int64
	// YSBEvents is the events per unthrottled YSB run; 0 means 5 M.
	YSBEvents int64
	// YSBRate paces the YSB window latency run (events/s, all source
	// instances); 0 means 200 k. The run lasts LatencyDuration (0: 5 s).
	YSBRate float64
	// Q5Events is the events per Nexmark q5 run; 0 means 1 M.
	Q5Events int64
	// Q8Events is the events per Nexmark q8 run; 0 means 1 M.
	Q8Events int64
	// NexmarkEvents is the events per run of each query of the nexmark
	// group; 0 means 10 M.
	NexmarkEvents int64
	// NexmarkQueries selects the queries of the nexmark group (q0, q1,
	// …); empty means all.
	NexmarkQueries []string
	// NATSURL is a running nats-server with JetStream, for the nats
	// group; NATSRecords its messages per run (0: 200 k).
	NATSURL     string
	NATSRecords int
}

// Groups are the scenario groups of the table, in order.
var Groups = []string{"core", "typed", "eo", "latency", "telemetry", "cross", "mtls", "kafka", "kafka-eo", "nats", "scaling", "recovery", "ysb", "wasm", "postgres", "nexmark", "autoscale"}

// GroupsHelp describes Groups for a flag's usage.
const GroupsHelp = `core (in-process throughput and latency), typed (the word count and YSB on sdk/stream vs hand-written), eo (exactly-once vs no guarantee), ` +
	`latency (p50/p99/p99.9 at 10, 50 and 90 % of saturation, with the runtime's latency breakdown), ` +
	`telemetry (off vs on), cross (cross-node against raw protoactor remote, alternating, with CPU per record on each side; needs the node binary and Consul), mtls (cross-node plaintext vs mutual TLS; same), ` +
	`kafka (Goka vs Sluice on kfake), kafka-eo (exactly-once output latency to a read_committed consumer), ` +
	`nats (NATS JetStream → count → NATS exactly-once vs a raw nats.go consumer→publisher loop; starts a nats-server), ` +
	`scaling (1/2/4 counter instances, 1/2/3 node processes, large state), ` +
	`autoscale (a 10× load step: time until the output meets the input, autoscaled vs fixed at the most and the fewest instances, and the changes), ` +
	`recovery (SIGKILL of a node process with large state, until throughput is back), ` +
	`ysb (Yahoo Streaming Benchmark events/s exactly-once and no guarantee, its window latency paced, JSON decoding; Nexmark q5 and q8 events/s per core), ` +
	`wasm (the keyed word count's counter as a wasm guest on wazero vs in Go, and the counter alone in sdktest, ns/record; builds the guest with the local go), ` +
	`postgres (the PostgreSQL sink vs a raw pgx COPY loop and per-row INSERTs; needs Debian's PostgreSQL server), ` +
	`nexmark (every Nexmark query of samples/nexmark, exactly-once and no guarantee, per core against Flink 1.13's published figure)`

// want reports whether the scenario group name is selected.
func (c TableConfig) want(name string) bool {
	return len(c.Scenarios) == 0 || slices.Contains(c.Scenarios, name)
}

// row is one line of the table.
type row struct {
	name, value, unit, ratio, note string
}

// tabler runs the scenarios of one table.
type tabler struct {
	w    io.Writer
	cfg  TableConfig
	prof profiler
	// saturated is the keyed word count's saturated rate, once measured
	// (the latency group paces from it).
	saturated float64
}

// measure runs a scenario cfg.Runs times, printing progress.
func (t *tabler) measure(name string, run func() (Result, error)) ([]Result, error) {
	var rs []Result
	for i := 0; i < t.cfg.Runs; i++ {
		r, err := t.once(name, i, t.cfg.Runs, run)
		if err != nil {
			return nil, err
		}
		fmt.Fprintln(t.w)
		rs = append(rs, r)
	}
	return rs, nil
}

// once runs run i of a scenario (profiled), printing its rate without a
// newline.
func (t *tabler) once(name string, i, n int, run func() (Result, error)) (Result, error) {
	fmt.Fprintf(t.w, "  %s: run %d/%d…", name, i+1, n)
	r, err := t.prof.run(name, i, run)
	if err != nil {
		fmt.Fprintln(t.w)
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintf(t.w, " %.0f/s", r.PerSec())
	return r, nil
}

// rates returns the runs' rates.
func rates(rs []Result) []float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = r.PerSec()
	}
	return xs
}

// medianRate returns the median of the runs' rates.
func medianRate(rs []Result) float64 { return Median(rates(rs)) }

// rateRange describes the spread of the runs' rates: "runs 1.20M–1.50M/s".
func rateRange(rs []Result) string {
	if len(rs) == 0 {
		return "no runs"
	}
	xs := rates(rs)
	return fmt.Sprintf("runs %s–%s/s", human(slices.Min(xs)), human(slices.Max(xs)))
}

// pairRange describes the spread of the ratios b[i]/a[i] of alternating
// runs (each run of b to the run of a just before it): "pairs 1.80–2.40×".
// It shows how far a ratio of medians can be from a single pair's.
func pairRange(a, b []Result) string {
	var xs []float64
	for i := range min(len(a), len(b)) {
		if a[i].PerSec() > 0 {
			xs = append(xs, b[i].PerSec()/a[i].PerSec())
		}
	}
	if len(xs) == 0 {
		return "no pairs"
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	return fmt.Sprintf("pairs %.2f–%.2f×", lo, hi)
}

// medianPct returns the median over the runs of each run's p-th
// percentile latency.
func medianPct(rs []Result, p float64) time.Duration {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = float64(r.Percentile(p))
	}
	return time.Duration(Median(xs))
}

// Table runs every scenario cfg.Runs times and writes the table to w,
// printing progress to w as it goes.
func Table(w io.Writer, cfg TableConfig) error {
	if cfg.Runs < 1 {
		cfg.Runs = 1
	}
	if cfg.Profile != "" {
		if err := os.MkdirAll(cfg.Profile, 0o755); err != nil {
			return fmt.Errorf("bench: -profile: %w", err)
		}
	}
	t := &tabler{w: w, cfg: cfg, prof: profiler{dir: cfg.Profile}, saturated: cfg.Saturated}
	var rows []row
	groups := []struct {
		name string
		run  func() ([]row, error)
	}{
		{"core", t.coreRows},
		{"typed", t.typedRows},
		{"eo", t.eoRows},
		{"latency", t.latencyRows},
		{"telemetry", t.telemetryRows},
		{"cross", t.crossRows},
		{"mtls", t.mtlsRows},
		{"kafka", func() ([]row, error) { return kafkaRows(w, cfg.Runs, cfg.Records) }},
		{"kafka-eo", t.kafkaEORows},
		{"nats", t.natsRows},
		{"scaling", t.scalingRows},
		{"autoscale", t.autoscaleRows},
		{"recovery", t.recoveryRows},
		{"ysb", t.ysbRows},
		{"wasm", t.wasmRows},
		{"postgres", t.postgresRows},
		{"nexmark", t.nexmarkRows},
	}
	var failed error
	for _, g := range groups {
		if !cfg.want(g.name) {
			continue
		}
		rs, err := g.run()
		if err != nil {
			// The rows measured so far are still printed.
			failed = fmt.Errorf("group %s: %w", g.name, err)
			break
		}
		rows = append(rows, rs...)
	}

	fmt.Fprintf(w, "\nMedians of %d runs (ratios within this run):\n\n", cfg.Runs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tmedian\tunit\tratio\tnote")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.name, r.value, r.unit, r.ratio, r.note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return failed
}

// coreRows: the protoactor chain, the keyed word count saturated and at
// 100k records/s.
func (t *tabler) coreRows() ([]row, error) {
	cfg := t.cfg
	chain, err := t.measure("protoactor 3-actor chain", func() (Result, error) { return ProtoactorChain(cfg.Records) })
	if err != nil {
		return nil, err
	}
	base := medianRate(chain)
	rows := []row{{"protoactor 3-actor chain (baseline)", human(base), "msgs/s", "1.00×", "plain Send, in process"}}
	wc, err := t.measure("sluice keyed word count", func() (Result, error) {
		return WordCount(WordCountConfig{Records: cfg.Records, Keys: 10_000})
	})
	if err != nil {
		return nil, err
	}
	rate := medianRate(wc)
	if cfg.Saturated == 0 {
		t.saturated = rate
	}
	rows = append(rows, row{"sluice keyed word count", human(rate), "records/s", fmt.Sprintf("%.2f×", rate/base),
		"source → group-by counter (Pebble) → sink, target ≥ 0.85×"})
	rows = append(rows, row{"  e2e latency p50 / p99, saturated", fmt.Sprintf("%v / %v", medianPct(wc, 50).Round(time.Microsecond), medianPct(wc, 99).Round(time.Microsecond)), "", "", "source unthrottled"})
	paced := 100_000.0
	wcp, err := t.measure("sluice keyed word count at 100k/s", func() (Result, error) {
		return WordCount(WordCountConfig{Records: min(cfg.Records, 300_000), Keys: 10_000, Rate: paced})
	})
	if err != nil {
		return nil, err
	}
	rows = append(rows, row{"  e2e latency p50 / p99 / p99.9 at 100k records/s", fmt.Sprintf("%v / %v / %v", medianPct(wcp, 50).Round(time.Microsecond),
		medianPct(wcp, 99).Round(time.Microsecond), medianPct(wcp, 99.9).Round(time.Microsecond)), "", "", "source paced; target p99 ≤ 1 ms"})
	return rows, nil
}

// alternate runs two variants of a scenario runs times each,
// alternating, so that drift on a shared machine affects both alike. The
// order within a pair alternates too (a b, b a, a b, …), so that whatever
// the position in a pair costs falls on both variants alike.
//
// inProcess is for scenarios that run in the benchmark's own process: each
// variant first runs once unmeasured, and each run starts with a garbage
// collection. The first runs in a process pay for its cold start (a fresh
// heap's page faults, lazy initialisation; about 20 % more CPU for a
// 2 M-record word count), which would otherwise fall on one variant; and a
// run would pay for collecting the garbage of the run before it.
func (t *tabler) alternate(names [2]string, runs int, inProcess bool, run func(second bool) (Result, error), note func(r Result) string) (a, b []Result, err error) {
	if inProcess {
		for j, name := range names {
			fmt.Fprintf(t.w, "  %s: warm-up run (not measured)…\n", name)
			if _, err := run(j == 1); err != nil {
				return nil, nil, fmt.Errorf("%s: warm-up: %w", name, err)
			}
		}
	}
	for i := 0; i < runs; i++ {
		for k := range names {
			j := k
			if i%2 == 1 {
				j = 1 - k
			}
			if inProcess {
				runtime.GC()
			}
			r, err := t.once(names[j], i, runs, func() (Result, error) { return run(j == 1) })
			if err != nil {
				return nil, nil, err
			}
			if note != nil {
				fmt.Fprint(t.w, note(r))
			}
			fmt.Fprintln(t.w)
			if j == 0 {
				a = append(a, r)
			} else {
				b = append(b, r)
			}
		}
	}
	return a, b, nil
}

// telemetryRunsPer is how many pairs of runs the telemetry rows make per
// cfg.Runs. Their target is a 5 % difference, and on a shared 2-core
// machine single runs of the word count vary by 10–15 % (telemetry off
// against off), so a median of 5 runs would move by more than the target.
const telemetryRunsPer = 3

// telemetryRows: the word count with telemetry off and on, alternating,
// telemetryRunsPer·cfg.Runs times each, in this process (see alternate).
// The process's CPU time per run is measured too: on a machine shared
// with other work it is a steadier figure than the throughput.
func (t *tabler) telemetryRows() ([]row, error) {
	cfg := t.cfg
	telOff, telOn, err := t.alternate([2]string{"word count, telemetry off", "word count, telemetry on"}, telemetryRunsPer*cfg.Runs, true, func(on bool) (Result, error) {
		wcc := WordCountConfig{Records: cfg.Records, Keys: 10_000}
		if on {
			wcc.Telemetry = TelemetryOn()
		}
		return WordCount(wcc)
	}, func(r Result) string { return fmt.Sprintf(", %.2f s CPU", r.CPU.Seconds()) })
	if err != nil {
		return nil, err
	}
	cpu := func(rs []Result) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = r.CPU.Seconds()
		}
		return Median(xs)
	}
	offRate, onRate := medianRate(telOff), medianRate(telOn)
	rows := []row{
		{"sluice keyed word count, telemetry off (baseline)", human(offRate), "records/s", "1.00×", fmt.Sprintf("%d runs alternate with the next row's after a warm-up run of each; ", len(telOff)) + rateRange(telOff)},
		{"sluice keyed word count, telemetry on", human(onRate), "records/s", fmt.Sprintf("%.2f×", onRate/offRate),
			"traces 1/1000, metrics collected every 1 s, no-op exporters; target ≥ 0.95×; " + rateRange(telOn) + ", " + pairRange(telOff, telOn)},
	}
	if offCPU, onCPU := cpu(telOff), cpu(telOn); offCPU > 0 {
		rows = append(rows, row{"  CPU per record, telemetry on / off", fmt.Sprintf("%.2f / %.2f", onCPU*1e6/float64(cfg.Records), offCPU*1e6/float64(cfg.Records)), "µs",
			fmt.Sprintf("%.2f×", onCPU/offCPU), "process CPU time from the first record to the last; target ≤ 1.05×"})
	}
	return rows, nil
}

// crossRows: protoactor remote one-way against Sluice cross-node, runs
// alternating, with the CPU time per record of each side.
func (t *tabler) crossRows() ([]row, error) {
	cfg := t.cfg
	if cfg.NodeBinary == "" || cfg.ConsulAddr == "" {
		return nil, nil
	}
	names := [2]string{"protoactor remote one-way", "sluice cross-node"}
	runs := [2]int{} // runs of each row so far: their index, for the processes' profiles
	raw, cross, err := t.alternate(names, cfg.Runs, false, func(sluice bool) (Result, error) {
		if !sluice {
			i := runs[0]
			runs[0]++
			return RemoteRaw(cfg.NodeBinary, cfg.Records, func(id string) []string { return t.prof.nodeFlags(names[0], i, id) })
		}
		i := runs[1]
		runs[1]++
		return CrossNode(cfg.NodeBinary, cfg.ConsulAddr, fmt.Sprintf("%s/cross-%d", cfg.TempDir, i), cfg.Records,
			func(id string) []string { return t.prof.nodeFlags(names[1], i, id) })
	}, func(r Result) string {
		note := fmt.Sprintf(", CPU per record %.2f + %.2f µs", r.SideCPUPerOp(0), r.SideCPUPerOp(1))
		if r.Blocked > 0 { // only Sluice's runs measure backpressure
			note += fmt.Sprintf(", sender blocked %.0f%%", 100*float64(r.Blocked)/float64(r.Elapsed))
		}
		return note
	})
	if err != nil {
		return nil, err
	}
	rawRate, crossRate := medianRate(raw), medianRate(cross)
	side := func(rs []Result, i int) float64 {
		xs := make([]float64, len(rs))
		for j, r := range rs {
			xs[j] = r.SideCPUPerOp(i)
		}
		return Median(xs)
	}
	rawSend, rawRecv, near, far := side(raw, 0), side(raw, 1), side(cross, 0), side(cross, 1)
	blocked := make([]float64, len(cross))
	for i, r := range cross {
		blocked[i] = float64(r.Blocked) / float64(r.Elapsed)
	}
	return []row{
		{"protoactor remote one-way (baseline)", human(rawRate), "msgs/s", "1.00×",
			"one record-sized message per Send, 2 processes; runs alternate with the next row; " + rateRange(raw)},
		{"  CPU per message, sender / receiver", fmt.Sprintf("%.2f / %.2f", rawSend, rawRecv), "µs", "1.00×", "each process's CPU time over the run"},
		{"sluice cross-node, group-by on far node", human(crossRate), "records/s", fmt.Sprintf("%.2f×", crossRate/rawRate),
			"2 node processes via Consul, batched, target ≥ 3.00×; " + rateRange(cross) + ", " + pairRange(raw, cross)},
		{"  CPU per record, near / far node", fmt.Sprintf("%.2f / %.2f", near, far), "µs", fmt.Sprintf("%.2f×", (near+far)/(rawSend+rawRecv)),
			fmt.Sprintf("each node's CPU time from the far node's first counted record to its last; ratio: both sides' sum to the baseline's; "+
				"the near node's generator was blocked by backpressure (waiting for the far node) %.0f%% of the time", 100*Median(blocked))},
	}, nil
}

// mtlsRows: cross-node plaintext against mutual TLS.
func (t *tabler) mtlsRows() ([]row, error) {
	if t.cfg.NodeBinary == "" || t.cfg.ConsulAddr == "" {
		return nil, nil
	}
	plain, secure, err := mtlsRuns(t.w, t.cfg)
	if err != nil {
		return nil, err
	}
	plainRate, tlsRate := medianRate(plain), medianRate(secure)
	return []row{
		{"sluice cross-node, plaintext (baseline)", human(plainRate), "records/s", "1.00×", "runs alternate with the next row"},
		{"sluice cross-node, mutual TLS", human(tlsRate), "records/s", fmt.Sprintf("%.2f×", tlsRate/plainRate),
			"-node-ca/-node-cert/-node-key: TLS 1.3, ECDSA P-256 certificates"},
	}, nil
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
