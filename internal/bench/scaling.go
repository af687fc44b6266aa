package bench

import (
	"bufio"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// scalingRows: the keyed word count with 1, 2 and 4 counter instances in
// one process; with 1, 2 and 3 node processes (when the cross-node
// scenarios can run); and with cfg.BigKeys distinct keys (default 10 M),
// each written once, state beyond Pebble's block cache when large enough.
// Writing new keys is slow: every first Get of a key is a Pebble Get of an
// absent key (10 M keys ran at 65k records/s, 2.5 minutes, on a quiet
// 2-core machine, against 1.5–2.5 M records/s with 10k keys).
func (t *tabler) scalingRows() ([]row, error) {
	cfg := t.cfg
	var rows []row
	pars := []int{1, 2, 4}
	byPar := make([][]Result, len(pars))
	for i := 0; i < cfg.Runs; i++ {
		for j, p := range pars {
			r, err := t.once(fmt.Sprintf("word count, %d counter instances", p), i, t.cfg.Runs, func() (Result, error) {
				return WordCount(WordCountConfig{Records: cfg.Records, Keys: 10_000, Parallelism: p})
			})
			if err != nil {
				return nil, err
			}
			fmt.Fprintln(t.w)
			byPar[j] = append(byPar[j], r)
		}
	}
	base := medianRate(byPar[0])
	for j, p := range pars {
		note := "in process, runs interleaved; 2 cores: overhead, not speed-up"
		if j == 0 {
			note = "baseline of the next two rows; " + note
		}
		rate := medianRate(byPar[j])
		rows = append(rows, row{fmt.Sprintf("scaling: word count, %d counter instance(s)", p), human(rate), "records/s", fmt.Sprintf("%.2f×", rate/base),
			note + fmt.Sprintf("; e2e p99 %s", fmtDur(medianPct(byPar[j], 99)))})
	}

	if cfg.NodeBinary != "" && cfg.ConsulAddr != "" {
		counts := []int{1, 2, 3}
		byNodes := make([][]Result, len(counts))
		for i := 0; i < cfg.Runs; i++ {
			for j, nodes := range counts {
				name := fmt.Sprintf("word count, %d node processes", nodes)
				r, err := t.once(name, i, t.cfg.Runs, func() (Result, error) {
					return NodesWordCount(cfg.NodeBinary, cfg.ConsulAddr, fmt.Sprintf("%s/scale-%d-%d", cfg.TempDir, nodes, i), cfg.Records, nodes,
						func(id string) []string { return t.prof.nodeFlags(name, i, id) })
				})
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(t.w, ", p99 %s\n", fmtDur(r.P99))
				byNodes[j] = append(byNodes[j], r)
			}
		}
		base := medianRate(byNodes[0])
		for j, nodes := range counts {
			var p99s []float64
			for _, r := range byNodes[j] {
				p99s = append(p99s, float64(r.P99))
			}
			layout := map[int]string{1: "gen and count on one node", 2: "gen on one node, count on the other", 3: "gen on one node, count on two"}[nodes]
			rate := medianRate(byNodes[j])
			rows = append(rows, row{fmt.Sprintf("scaling: word count, %d node process(es)", nodes), human(rate), "records/s", fmt.Sprintf("%.2f×", rate/base),
				fmt.Sprintf("%s, 4 counter instances, Consul; count e2e p99 %s (node histograms, bucket bound); 2 cores: overhead, not speed-up",
					layout, fmtDur(time.Duration(Median(p99s))))})
		}
	}

	keys := cfg.BigKeys
	if keys <= 0 {
		keys = 10_000_000
	}
	r, err := t.once(fmt.Sprintf("word count, %s keys", human(float64(keys))), 0, t.cfg.Runs, func() (Result, error) {
		return WordCount(WordCountConfig{Records: keys, Keys: keys})
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(t.w, ", %d MB of state\n", r.StateBytes>>20)
	where := "beyond Pebble's 64 MiB block cache; the OS page cache still holds it"
	if r.StateBytes <= 64<<20 {
		where = "within Pebble's 64 MiB block cache: raise -big-keys"
	}
	rows = append(rows, row{fmt.Sprintf("scaling: word count, %s distinct keys", human(float64(keys))), human(r.PerSec()), "records/s", fmt.Sprintf("%.2f×", r.PerSec()/base),
		fmt.Sprintf("one run, each key written once: a %d MB data directory (%s); ratio to 1 instance, 10k keys; e2e p99 %s", r.StateBytes>>20, where, fmtDur(r.Percentile(99)))})
	return rows, nil
}

// dirSize returns the bytes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// NodesWordCount runs the testnode generator and counter (4 instances,
// counting only) on nodes node processes joined through Consul: one node
// hosts both; two host the generator on one and the counter on the
// other; three the generator on one and the counter on the other two. The
// rate is taken between the first and the last counted record (the
// counting nodes polled as nextPoll says); Result.P99 is the counter's
// end-to-end p99 from the nodes' own histograms (Prometheus, bucket
// bound). nodeFlags adds flags per node id.
func NodesWordCount(nodeBin, consulAddr, dataDir string, n, nodes int, nodeFlags func(id string) []string) (Result, error) {
	common := []string{"-consul", consulAddr, "-node-insecure", "-cluster", "bench" + strconv.FormatInt(time.Now().UnixNano(), 36), "-http", "127.0.0.1:0",
		"-records", strconv.Itoa(n), "-keys", "10000", "-gen-parallelism", "1", "-count-parallelism", "4", "-log-level", "error"}
	var counters []string // control API addresses of the nodes that count
	for k := 1; k <= nodes; k++ {
		id := "n" + strconv.Itoa(k)
		own := []string{"-id", id, "-data", dataDir + "/" + id}
		switch {
		case nodes == 1:
		case k == 1:
			own = append(own, "-host", "gen")
		default:
			own = append(own, "-host", "count")
		}
		args := append(append(own, common...), nodeFlags(id)...)
		p, ready, err := startProc(nodeBin, args, nil)
		if err != nil {
			return Result{}, err
		}
		defer p.stop(10 * time.Second)
		if nodes == 1 || k > 1 {
			addr, _ := strings.CutPrefix(ready, "ready http=")
			counters = append(counters, addr)
		}
	}
	var t0 time.Time
	var c0 int64
	var c int64
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(nextPoll(t0, c0, c, int64(n))) {
		c = 0
		ok := true
		for _, a := range counters {
			st, err := nodeStatus(a)
			if err != nil {
				ok = false
				break
			}
			c += processed(st, "count")
		}
		if !ok {
			continue
		}
		if t0.IsZero() && c > 0 {
			t0, c0 = time.Now(), c
		}
		if c >= int64(n) {
			r := Result{Ops: int64(n) - c0, Elapsed: time.Since(t0)}
			var err error
			r.P99, err = nodesP99(counters, "count")
			return r, err
		}
	}
	return Result{}, fmt.Errorf("bench: %d nodes: the counters did not count %d records in 5 minutes", nodes, n)
}

// nodesP99 reads the end-to-end histogram of op from the nodes'
// Prometheus exposition and returns the upper bound of the bucket holding
// its 99th percentile.
func nodesP99(addrs []string, op string) (time.Duration, error) {
	const metric = "sluice_operator_end_to_end_duration_seconds_bucket{"
	cum := map[float64]float64{} // le → cumulative count, summed over instances and nodes
	for _, a := range addrs {
		body, err := fetch(a, "/metrics")
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(strings.NewReader(body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l := sc.Text()
			if !strings.HasPrefix(l, metric) || !strings.Contains(l, `sluice_operator_name="`+op+`"`) {
				continue
			}
			_, rest, _ := strings.Cut(l, `le="`)
			leS, val, _ := strings.Cut(rest, `"} `)
			le, err1 := strconv.ParseFloat(leS, 64) // "+Inf" parses as +Inf
			v, err2 := strconv.ParseFloat(strings.Fields(val)[0], 64)
			if err1 == nil && err2 == nil {
				cum[le] += v
			}
		}
	}
	les := make([]float64, 0, len(cum))
	for le := range cum {
		les = append(les, le)
	}
	sort.Float64s(les)
	if len(les) == 0 || cum[les[len(les)-1]] == 0 {
		return 0, fmt.Errorf("bench: no %s end-to-end histogram at %v", op, addrs)
	}
	total := cum[les[len(les)-1]]
	for _, le := range les {
		if cum[le] >= 0.99*total {
			if math.IsInf(le, 1) {
				return -1, nil
			}
			return time.Duration(le * float64(time.Second)), nil
		}
	}
	return -1, nil
}
