package mesos_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/mesos"
	"github.com/sluicehq/sluice/mesos/mesostest"
)

// TestPoolAutoscale: an autoscaled pool of node tasks runs a file source →
// an autoscaled counter (2 ms per line, at most 3 instances) → a file
// sink, exactly-once. A load step (100 → 1,000 lines/s appended to the
// file) has the counter scaled up, the operators then need more instances
// than one node holds (4: 1 cpu × 4 per cpu), and the pool grows by one
// node; once the load drops, the counter is scaled back down and, after
// the pool's stabilisation window, the second node is drained (its
// instances move to the first, with their state) and its task killed.
// Every count of every word is committed once: "w7\t1" … "w7\tn" for a
// word written n times.
func TestPoolAutoscale(t *testing.T) {
	const keys = 300
	e := newEnv(t, mesostest.AgentSpec{ID: "agent-1", CPUs: 4, Mem: 4096, Disk: 8192})
	io := t.TempDir()
	in, out, ckpt := filepath.Join(io, "words.txt"), filepath.Join(io, "counts.txt"), filepath.Join(io, "checkpoints")
	w := startWriter(t, in, keys)

	cfg := e.config("s1")
	cfg.NodeScaleInterval = 500 * time.Millisecond
	pool := mesos.Pool{Name: "work", Instances: 1, CPUs: 1, Mem: 256, Retries: 3,
		Autoscale: &mesos.PoolAutoscale{Min: 1, Max: 2, InstancesPerCPU: 4, ScaleDownAfter: 4 * time.Second, CoolDown: 2 * time.Second},
		Env: map[string]string{
			"SLUICE_NODE_INSECURE":               "1",
			"SLUICE_TEST_FILE_IN":                in,
			"SLUICE_TEST_FILE_OUT":               out,
			"SLUICE_TEST_COUNT_PARALLELISM":      "1",
			"SLUICE_TEST_COUNT_COST":             "2ms",
			"SLUICE_TEST_COUNT_MAX":              "3",
			"SLUICE_TEST_COUNT_SCALE_DOWN_AFTER": "5s",
			"SLUICE_TEST_COUNT_COOL_DOWN":        "2s",
			"SLUICE_TEST_AUTOSCALE_INTERVAL":     "500ms",
			"SLUICE_TEST_AUTOSCALE_WINDOW":       "3s",
			"SLUICE_GUARANTEE":                   "exactly-once",
			"SLUICE_CHECKPOINTS":                 ckpt,
			"SLUICE_CHECKPOINT_INTERVAL":         "300ms",
		}}
	s := e.start(cfg, pool)
	poolTasks := func() int {
		n := 0
		for id := range e.running() {
			if strings.HasPrefix(id, "work.") {
				n++
			}
		}
		return n
	}
	e.waitMaster(waitTimeout, "the pool's first node running", func() bool { return poolTasks() == 1 })
	e.waitMembersAreTasks()

	// The low rate: one node holds it all.
	w.pace.Set(100)
	sluicetest.WaitEvery(t, waitTimeout, 50*time.Millisecond, "counts committed at the low rate", func() bool { return len(readParts(t, out)) > 300 })
	if n := len(e.master.Tasks()); n != 1 {
		t.Fatalf("%d tasks launched at the low rate, want 1", n)
	}

	// The step: the pool grows by one node.
	step := time.Now()
	w.pace.Set(1000)
	e.waitMaster(90*time.Second, "the pool grown to 2 nodes", func() bool { return poolTasks() == 2 })
	t.Logf("the pool grew to 2 nodes %v after the step", time.Since(step).Round(time.Millisecond))
	e.waitMembersAreTasks()
	second := ""
	for id := range e.running() {
		if strings.HasPrefix(id, "work.1.") {
			second = id
		}
	}
	if second == "" {
		t.Fatalf("no task of slot work.1 running: %v", e.running())
	}
	sluicetest.WaitEvery(t, waitTimeout, 100*time.Millisecond, "the second node to run instances", func() bool { return e.instancesOn(second) > 0 })

	// The drop: the pool shrinks after a drain.
	drop := time.Now()
	w.pace.Set(100)
	e.waitMaster(2*time.Minute, "the pool back at 1 node", func() bool { return poolTasks() == 1 })
	t.Logf("the pool shrank to 1 node %v after the drop", time.Since(drop).Round(time.Millisecond))
	if _, ok := e.running()[second]; ok {
		t.Fatalf("the node of the highest slot, %s, still runs", second)
	}
	for _, tk := range e.master.Tasks() {
		if tk.ID != second {
			continue
		}
		b, err := os.ReadFile(filepath.Join(tk.Sandbox, "stderr"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "node drained") {
			t.Errorf("node %s was killed without a drain first; its log:\n%s", second, tail(b, 3000))
		}
	}
	if n := len(e.master.Tasks()); n != 2 {
		t.Errorf("%d tasks launched in all, want 2 (one more for the step)", n)
	}
	sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "the pool's status to say 1 node", func() bool {
		p := s.Status().Pools[0]
		return p.Desired == 1 && p.Running == 1
	})

	// Everything is counted exactly once.
	written := w.stop()
	lines, stable := 0, time.Now()
	sluicetest.WaitEvery(t, 2*time.Minute, 100*time.Millisecond, "every count committed", func() bool {
		if n := len(readParts(t, out)); n != lines {
			lines, stable = n, time.Now()
		}
		return lines >= written && time.Since(stable) > 2*time.Second
	})
	seen, err := testkinds.CountLines(readParts(t, out))
	if err != nil {
		t.Fatal(err)
	}
	var wrong []string
	for i := range keys {
		k := fmt.Sprintf("w%d", i)
		want := written / keys
		if i < written%keys {
			want++
		}
		for n := 1; n <= want+1; n++ {
			if got, exp := seen[k][n], map[bool]int{true: 1}[n <= want]; got != exp {
				wrong = append(wrong, fmt.Sprintf("%s\t%d: %d times, want %d", k, n, got, exp))
			}
		}
	}
	if len(wrong) > 0 || lines != written {
		t.Fatalf("%d lines written, %d count lines committed; %d wrong, for example:\n%s", written, lines, len(wrong), strings.Join(wrong[:min(len(wrong), 12)], "\n"))
	}
	t.Logf("%d lines through a grow and a drained shrink: each counted once", written)
}

// instancesOn counts the running instances on node id (its GET /v1/node).
func (e *env) instancesOn(id string) int {
	for _, m := range e.members() {
		if m.Service.Meta["sluice_id"] != id {
			continue
		}
		var st nodeStatus
		if err := getJSON("http://"+m.Service.Meta["sluice_http"]+"/v1/node", &st); err != nil {
			return 0
		}
		n := 0
		for _, o := range st.Operators {
			for _, in := range o.Instances {
				if in.State == "running" {
					n++
				}
			}
		}
		return n
	}
	return 0
}

// writer appends lines "w<i mod keys>" to a file at the rate its pace
// says, from its goroutine until stop.
type writer struct {
	pace    *testkinds.Pace
	stopped chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	n       int
}

// startWriter creates path and starts writing it (at rate 0 until the
// pace is set).
func startWriter(t *testing.T, path string, keys int) *writer {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := &writer{pace: &testkinds.Pace{}, stopped: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer f.Close()
		bw := bufio.NewWriter(f)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		last, owed := time.Now(), 0.0
		for {
			select {
			case <-w.stopped:
				return
			case now := <-tick.C:
				owed += w.pace.Rate() * now.Sub(last).Seconds()
				last = now
				w.mu.Lock()
				for ; owed >= 1; owed-- {
					fmt.Fprintf(bw, "w%d\n", w.n%keys)
					w.n++
				}
				w.mu.Unlock()
				if err := bw.Flush(); err != nil {
					t.Errorf("writing %s: %v", path, err)
					return
				}
			}
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

// stop ends the writing and returns the lines written; safe twice.
func (w *writer) stop() int {
	select {
	case <-w.stopped:
	default:
		close(w.stopped)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// readParts returns the lines of the committed parts of the file sink
// writing path.
func readParts(t *testing.T, path string) []string {
	t.Helper()
	lines, err := testkinds.SinkParts(path)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// tail returns the last n bytes of b.
func tail(b []byte, n int) []byte { return b[max(0, len(b)-n):] }

// TestParsePoolsAutoscale: a pools file's autoscale settings, and the
// refusals naming the field.
func TestParsePoolsAutoscale(t *testing.T) {
	pools, err := mesos.ParsePools([]byte(`
- name: work
  instances: 1
  cpus: 2
  mem: 1024
  autoscale: {min: 1, max: 4, instances_per_cpu: 3, scale_down_after: 5m, cool_down: 30s}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := mesos.PoolAutoscale{Min: 1, Max: 4, InstancesPerCPU: 3, ScaleDownAfter: 5 * time.Minute, CoolDown: 30 * time.Second}
	if a := pools[0].Autoscale; a == nil || *a != want {
		t.Fatalf("autoscale = %+v, want %+v", a, want)
	}
	for _, c := range []struct{ yaml, field string }{
		{"- {name: a, instances: 1, cpus: 1, mem: 64, autoscale: {min: 0, max: 2}}", "pools[0].autoscale.min"},
		{"- {name: a, instances: 1, cpus: 1, mem: 64, autoscale: {min: 3, max: 2}}", "pools[0].autoscale.max"},
		{"- {name: a, instances: 1, cpus: 1, mem: 64, autoscale: {min: 1, max: 2, cool_down: -1s}}", "pools[0].autoscale.cool_down"},
		{"- {name: a, instances: 1, cpus: 1, mem: 64, autoscale: {min: 1, max: 2}}\n- {name: b, instances: 1, cpus: 1, mem: 64, autoscale: {min: 1, max: 2}}", "pools[1].autoscale"},
	} {
		_, err := mesos.ParsePools([]byte(c.yaml))
		var ce *mesos.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%s: %v, want an error naming %s", c.yaml, err, c.field)
		}
	}
}
