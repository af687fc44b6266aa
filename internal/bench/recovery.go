package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/control"
)

// RecoveryConfig sets up the SIGKILL recovery scenario.
type RecoveryConfig struct {
	// NodeBinary is a built internal/testnode.
	NodeBinary string
	// Dir holds the node's data directory and checkpoint store.
	Dir string
	// State is the state to build before the kill, in bytes; 0 means
	// 1 GiB. It is made of keys of 1 KiB each (8 bytes of count and
	// 1,000 of incompressible padding), each written once before the
	// kill and then updated round and round.
	State int64
	// NodeFlags adds flags to the restarted node (profiles).
	NodeFlags []string
}

// Recovery is what RecoverySIGKILL measured.
type Recovery struct {
	// StateBytes is the size of the last checkpoint before the kill.
	StateBytes int64
	// Before is the counter's throughput before the kill (records/s, the
	// median of 250 ms windows over 3 s).
	Before float64
	// Exit is from SIGKILL to the process being gone; Start from
	// starting it again to its control API answering (Pebble opened);
	// Restore from then to every instance running again (state restored
	// from the checkpoint store); Replay from then to the first 250 ms
	// window at 90 % of Before or more (records since the checkpoint
	// replayed, and the backlog). Total is from SIGKILL to the end of
	// that window.
	Exit, Start, Restore, Replay, Total time.Duration
}

// RecoverySIGKILL runs the testnode generator and counter embedded in a
// node process, exactly-once with checkpoints every 1 s to a directory
// store, until the counter holds cfg.State bytes of state and a
// checkpoint has it; measures its throughput; SIGKILLs the process and
// starts it again at once on the same data directory (a supervisor
// would; an embedded node has no failure detection: in a cluster the
// survivors notice a crash through Consul's health checks first), and
// measures the phases until the throughput is back to 90 %.
func RecoverySIGKILL(cfg RecoveryConfig) (Recovery, error) {
	var rec Recovery
	if cfg.State <= 0 {
		cfg.State = 1 << 30
	}
	const pad = 1000
	keys := max(cfg.State/(pad+24), 1000)
	args := []string{"-id", "rec", "-data", filepath.Join(cfg.Dir, "data"), "-guarantee", "exactly-once",
		"-checkpoints", filepath.Join(cfg.Dir, "checkpoints"), "-checkpoint-interval", "1s",
		"-records", "1000000000000", "-keys", strconv.FormatInt(keys, 10), "-pad", strconv.Itoa(pad),
		"-gen-parallelism", "1", "-count-parallelism", "2", "-log-level", "error"}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return rec, err
	}
	p, ready, err := startProc(cfg.NodeBinary, args, nil)
	if err != nil {
		return rec, err
	}
	defer func() {
		if p != nil {
			p.kill()
		}
	}()
	addr, _ := strings.CutPrefix(ready, "ready http=")

	// Build the state: every key written, and a checkpoint holding it.
	deadline := time.Now().Add(15 * time.Minute)
	for {
		st, err := nodeStatus(addr)
		if err == nil && st.Checkpoints != nil && st.Checkpoints.LastSize >= cfg.State*9/10 && processed(st, "count") > keys {
			rec.StateBytes = st.Checkpoints.LastSize
			break
		}
		if time.Now().After(deadline) {
			return rec, fmt.Errorf("bench: recovery: no checkpoint of %d MB of state after 15 minutes", cfg.State>>20)
		}
		time.Sleep(250 * time.Millisecond) // polling the node's status
	}
	rates, err := windowRates(addr, 12, 250*time.Millisecond)
	if err != nil {
		return rec, err
	}
	rec.Before = Median(rates)

	killed := time.Now()
	p.kill()
	rec.Exit = time.Since(killed)
	started := time.Now()
	p, ready, err = startProc(cfg.NodeBinary, append(args, cfg.NodeFlags...), nil)
	if err != nil {
		return rec, fmt.Errorf("bench: recovery: restart: %w", err)
	}
	addr, _ = strings.CutPrefix(ready, "ready http=")
	up := time.Now()
	rec.Start = up.Sub(started)
	for deadline := up.Add(5 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		st, err := nodeStatus(addr)
		if err == nil && allRunning(st) {
			break
		}
		if time.Now().After(deadline) {
			return rec, fmt.Errorf("bench: recovery: instances not running 5 minutes after the restart")
		}
	}
	running := time.Now()
	rec.Restore = running.Sub(up)
	for deadline := running.Add(5 * time.Minute); ; {
		r, err := windowRates(addr, 1, 250*time.Millisecond)
		if err != nil {
			return rec, err
		}
		if r[0] >= 0.9*rec.Before {
			break
		}
		if time.Now().After(deadline) {
			return rec, fmt.Errorf("bench: recovery: throughput not back to 90%% of %.0f/s 5 minutes after the restart", rec.Before)
		}
	}
	rec.Replay = time.Since(running)
	rec.Total = time.Since(killed)
	p.stop(30 * time.Second) // the restarted node writes its profiles
	p = nil
	return rec, nil
}

// windowRates returns the counter's throughput on the node at addr in n
// consecutive windows of d.
func windowRates(addr string, n int, d time.Duration) ([]float64, error) {
	read := func() (int64, time.Time, error) {
		st, err := nodeStatus(addr)
		return processed(st, "count"), time.Now(), err
	}
	c0, t0, err := read()
	if err != nil {
		return nil, err
	}
	var out []float64
	for range n {
		time.Sleep(d) // the window being measured
		c1, t1, err := read()
		if err != nil {
			return nil, err
		}
		out = append(out, float64(c1-c0)/t1.Sub(t0).Seconds())
		c0, t0 = c1, t1
	}
	return out, nil
}

// allRunning reports whether the node has instances and all of them run.
func allRunning(st control.Status) bool {
	n := 0
	for _, o := range st.Operators {
		for _, in := range o.Instances {
			if in.State != "running" {
				return false
			}
			n++
		}
	}
	return n > 0
}

// recoveryRows measures recovery after SIGKILL, at most 3 times (each
// run builds its state anew: a gigabyte takes a while).
func (t *tabler) recoveryRows() ([]row, error) {
	if t.cfg.NodeBinary == "" {
		return nil, nil
	}
	var rs []Recovery
	runs := min(t.cfg.Runs, 3)
	for i := 0; i < runs; i++ {
		const name = "recovery after SIGKILL"
		fmt.Fprintf(t.w, "  %s: run %d/%d…", name, i+1, runs)
		r, err := RecoverySIGKILL(RecoveryConfig{NodeBinary: t.cfg.NodeBinary, Dir: fmt.Sprintf("%s/recovery-%d", t.cfg.TempDir, i),
			State: t.cfg.RecoveryState, NodeFlags: t.prof.nodeFlags(name, i, "restarted")})
		if err != nil {
			fmt.Fprintln(t.w)
			return nil, err
		}
		fmt.Fprintf(t.w, " %d MB, %.0f/s before; exit %v, start %v, restore %v, replay %v: %v\n", r.StateBytes>>20, r.Before,
			r.Exit.Round(time.Millisecond), r.Start.Round(time.Millisecond), r.Restore.Round(time.Millisecond), r.Replay.Round(time.Millisecond), r.Total.Round(time.Millisecond))
		_ = os.RemoveAll(fmt.Sprintf("%s/recovery-%d", t.cfg.TempDir, i))
		rs = append(rs, r)
	}
	sort.Slice(rs, func(a, b int) bool { return rs[a].Total < rs[b].Total })
	m := rs[len(rs)/2] // the run of median total
	return []row{{"recovery after SIGKILL, crash → 90 % throughput", m.Total.Round(time.Millisecond).String(), "", "",
		fmt.Sprintf("the median of %d runs: %d MB of state in the last checkpoint, %s records/s before; detection 0 (embedded, restarted at once), "+
			"process gone %v, start %v, restore %v, replay to 90 %% %v; target ≤ 5 s",
			len(rs), m.StateBytes>>20, human(m.Before), m.Exit.Round(time.Millisecond), m.Start.Round(time.Millisecond), m.Restore.Round(time.Millisecond), m.Replay.Round(time.Millisecond))}}, nil
}
