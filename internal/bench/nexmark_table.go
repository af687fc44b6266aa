package bench

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/samples/nexmark"
)

// flinkPerCore is Flink 1.13's published Nexmark throughput per core
// (nexmark/nexmark README: 8 cores, exactly-once with RocksDB), in
// events/s (Throughput/Cores of its results table, rounded to
// the thousand); it publishes none for q6, which Flink lacks.
var flinkPerCore = map[string]float64{
	"q0": 155_000, "q1": 158_000, "q2": 175_000, "q3": 152_000, "q4": 34_000, "q5": flinkQ5PerCore, "q7": 12_000, "q8": 146_000, "q9": 14_000,
	"q10": 58_000, "q11": 40_000, "q12": 76_000, "q13": 131_000, "q14": 161_000, "q15": 72_000, "q16": 19_000,
	"q17": 117_000, "q18": 54_000, "q19": 44_000, "q20": 19_000, "q21": 98_000, "q22": 130_000,
}

// nexmarkQueries are the queries of the nexmark group, in order.
var nexmarkQueries = []string{"q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "q11", "q12", "q13", "q14", "q15", "q16", "q17", "q18", "q19", "q20", "q21", "q22"}

// NexmarkQuery runs the Nexmark query named name (q0 to q9 as
// samples/nexmark has them) as Q5 runs query 5, and checks that its
// answers are exactly the query's exact answer.
func NexmarkQuery(name string, cfg NexmarkConfig) (Result, error) {
	switch name {
	case "q5":
		return Q5(cfg)
	case "q8":
		return Q8(cfg)
	}
	q, ok := nexmark.QueryNamed(name)
	if !ok {
		return Result{}, fmt.Errorf("bench: no Nexmark query %q", name)
	}
	ncfg := cfg.nexmark()
	fs, err := q.Build(ncfg)
	if err != nil {
		return Result{}, err
	}
	var first firstEvent
	for i, f := range fs {
		if f().Metadata().Name == nexmark.SourceName {
			fs[i] = observe(f, &first, nil)
		}
	}
	sink := q.NewSink()
	end, cpu, err := runBounded(cfg.ExactlyOnce, sink.Name(), append(fs, sink.Factory()))
	if err != nil {
		return Result{}, fmt.Errorf("nexmark %s: %w (%d answers)", name, err, sink.Len())
	}
	got, err := sink.Answers()
	if err != nil {
		return Result{}, fmt.Errorf("nexmark %s: %w: %w", name, errWrongOutput, err)
	}
	if err := q.Check(got, expected(q, ncfg)); err != nil {
		return Result{}, fmt.Errorf("nexmark %s: %w: %w", name, errWrongOutput, err)
	}
	start, cpu0, err := first.get()
	if err != nil {
		return Result{}, err
	}
	return Result{Ops: cfg.Events, Elapsed: end.Sub(start), CPU: cpu - cpu0}, nil
}

// nexmarkRows: every Nexmark query of samples/nexmark unthrottled over a
// bounded stream, with no guarantee and exactly-once (checkpoints every
// 1 s), alternating in one process; per query its events/s per core
// (÷ GOMAXPROCS) against Flink 1.13's published figure per core, and per
// CPU-second used. Every run's answers are checked against the query's
// exact answer; a wrong one gives a row saying so.
func (t *tabler) nexmarkRows() ([]row, error) {
	n := t.cfg.NexmarkEvents
	if n <= 0 {
		n = 10_000_000
	}
	procs := float64(runtime.GOMAXPROCS(0))
	var rows []row
	for _, q := range nexmarkQueries {
		if len(t.cfg.NexmarkQueries) > 0 && !slices.Contains(t.cfg.NexmarkQueries, q) {
			continue
		}
		none, eo, err := t.alternate([2]string{"Nexmark " + q + ", no guarantee", "Nexmark " + q + ", exactly-once"}, t.cfg.Runs, true, func(exactly bool) (Result, error) {
			return NexmarkQuery(q, NexmarkConfig{Events: n, ExactlyOnce: exactly})
		}, nil)
		switch {
		case errors.Is(err, errWrongOutput):
			rows = append(rows, row{"Nexmark " + q, "WRONG OUTPUT", "", "", err.Error()})
			continue
		case err != nil:
			return nil, err
		}
		flink, ratio := "no Flink figure", ""
		if f, ok := flinkPerCore[q]; ok {
			flink = "Flink 1.13: " + human(f) + "/core"
			ratio = fmt.Sprintf("%.1f×", medianRate(eo)/procs/f)
		}
		eoRate, noneRate := medianRate(eo), medianRate(none)
		rows = append(rows,
			row{"Nexmark " + q + ", exactly-once, per core", human(eoRate / procs), "events/s/core", ratio,
				fmt.Sprintf("%s; %s events/s in all (%s events, %.1f s a run, parallelism 2, checkpoints every 1 s), %s per CPU-second used; output = exact answer",
					flink, human(eoRate), human(float64(n)), medianElapsed(eo).Seconds(), human(1e9/cpuPerOp(eo)))},
			row{"  Nexmark " + q + ", no guarantee, per core", human(noneRate / procs), "events/s/core", fmt.Sprintf("%.2f× e-o", noneRate/eoRate),
				fmt.Sprintf("%s events/s in all, %s per CPU-second used; runs alternate with the row above", human(noneRate), human(1e9/cpuPerOp(none)))})
	}
	return rows, nil
}

// lastExpected caches the exact answer of the nexmark group's latest
// query: its runs share one configuration, and the answer of 10 M events
// takes seconds to compute. One is kept: 10 M events' answers are
// hundreds of MB.
var lastExpected struct {
	sync.Mutex
	key     string
	answers []nexmark.Answer
}

// expected returns q's exact answer for c, computed once.
func expected(q nexmark.Query, c nexmark.Config) []nexmark.Answer {
	lastExpected.Lock()
	defer lastExpected.Unlock()
	if k := fmt.Sprintf("%s %+v", q.Name, c); k != lastExpected.key {
		lastExpected.key, lastExpected.answers = k, q.Expected(c)
	}
	return lastExpected.answers
}

// medianElapsed returns the median length of the runs.
func medianElapsed(rs []Result) time.Duration {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = float64(r.Elapsed)
	}
	return time.Duration(Median(xs))
}
