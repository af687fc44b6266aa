package mesos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/mesos"
	"github.com/sluicehq/sluice/mesos/mesosstatus"
	"github.com/sluicehq/sluice/mesos/mesostest"
)

// End-to-end tests: a real Scheduler (or sluice-mesos processes) against
// the mesostest master, whose tasks are real processes (the testnode
// binary), and a real Consul dev agent.

var (
	nodeBinary  string // testnode, built by TestMain
	schedBinary string // sluice-mesos, built by TestMain
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-mesos-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for bin, pkg := range map[*string]string{
		&nodeBinary:  "github.com/sluicehq/sluice/internal/testnode",
		&schedBinary: "github.com/sluicehq/sluice/cmd/sluice-mesos",
	} {
		if *bin, err = proctest.Build(dir, pkg, raceEnabled); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// waitTimeout bounds waits that do not involve a leader change.
const waitTimeout = 60 * time.Second

// env is a Mesos master with agents and a Consul agent.
type env struct {
	t       *testing.T
	master  *mesostest.Master
	consul  *consultest.Agent
	cluster string
}

func newEnv(t *testing.T, agents ...mesostest.AgentSpec) *env {
	t.Helper()
	return newEnvWith(t, mesostest.Config{Agents: agents})
}

// newEnvWith is newEnv with a master configuration; zero timings get the
// short ones of newEnv.
func newEnvWith(t *testing.T, cfg mesostest.Config) *env {
	t.Helper()
	return newEnvSecure(t, cfg, consultest.Options{})
}

// newEnvSecure is newEnvWith with a Consul agent started with opts (ACLs,
// TLS).
func newEnvSecure(t *testing.T, cfg mesostest.Config, opts consultest.Options) *env {
	t.Helper()
	c := consultest.StartWith(t, opts)
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = time.Second
	}
	if cfg.AllocationInterval == 0 {
		cfg.AllocationInterval = 50 * time.Millisecond
	}
	if cfg.StatusUpdateRetryInterval == 0 {
		cfg.StatusUpdateRetryInterval = 2 * time.Second
	}
	if cfg.KillGracePeriod == 0 {
		cfg.KillGracePeriod = 2 * time.Second
	}
	cfg.Logf = logf(t)
	// The scheduler must keep the allocation_info it is offered.
	cfg.StrictAllocationInfo = true
	for i := range cfg.Agents {
		cfg.Agents[i] = localAgent(cfg.Agents[i])
	}
	m, err := mesostest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpSandboxes(t, m)
		}
		if err := m.Close(); err != nil {
			t.Errorf("closing the master: %v", err)
		}
	})
	return &env{t: t, master: m, consul: c, cluster: clusterName(t)}
}

// dumpSandboxes logs the end of every task's stderr (for failed tests).
func dumpSandboxes(t *testing.T, m *mesostest.Master) {
	for _, tk := range m.Tasks() {
		b, err := os.ReadFile(filepath.Join(tk.Sandbox, "stderr"))
		if err != nil {
			continue
		}
		if len(b) > 2000 {
			b = b[len(b)-2000:]
		}
		t.Logf("task %s (%s, %s) stderr:\n%s", tk.ID, tk.State, tk.ExitStatus, b)
	}
}

// logf logs to t until the test ends (goroutines may outlive it briefly).
func logf(t *testing.T) func(string, ...any) {
	var mu sync.Mutex
	done := false
	t.Cleanup(func() { mu.Lock(); done = true; mu.Unlock() })
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Logf(format, args...)
		}
	}
}

type logWriter struct{ logf func(string, ...any) }

func (w logWriter) Write(p []byte) (int, error) {
	w.logf("%s", bytes.TrimRight(p, "\n"))
	return len(p), nil
}

var nonName = regexp.MustCompile(`[^A-Za-z0-9-]+`)

func clusterName(t *testing.T) string {
	n := nonName.ReplaceAllString(t.Name(), "-")
	if len(n) > 40 {
		n = n[:40]
	}
	return strings.ToLower(n)
}

// config is a scheduler configuration with short timings.
func (e *env) config(id string) mesos.Config {
	c := mesos.DefaultConfig()
	c.Master = e.master.URL()
	c.Consul = e.consul.Addr()
	c.Cluster = e.cluster
	c.ID = id
	c.NodeBinary = nodeBinary
	c.FailoverTimeout = 60 * time.Second
	c.KillGracePeriod = 5 * time.Second
	c.CallTimeout = 5 * time.Second
	c.SubscribeBackoffMin, c.SubscribeBackoffMax = 100*time.Millisecond, time.Second
	c.RelaunchBackoffMin, c.RelaunchBackoffMax = 200*time.Millisecond, time.Second
	c.ReconcileRetry = 3 * time.Second
	c.DeclineRefuse = time.Second
	c.IdleRefuse = 10 * time.Second
	c.StatusDebounce, c.StatusInterval = 50*time.Millisecond, time.Second
	c.HTTP = "127.0.0.1:0"
	c.Logger = slog.New(slog.NewTextHandler(logWriter{logf(e.t)}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return c
}

// sched is a Scheduler running in the test process.
type sched struct {
	*mesos.Scheduler
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// start runs a scheduler until stop or the end of the test.
func (e *env) start(cfg mesos.Config, pools ...mesos.Pool) *sched {
	e.t.Helper()
	s, err := mesos.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := s.SetPools(pools); err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &sched{Scheduler: s, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Run(ctx) }()
	e.t.Cleanup(func() { r.stop(e.t) })
	return r
}

// stop stops the scheduler and waits for Run to return. It may be called
// twice.
func (s *sched) stop(t *testing.T) {
	s.once.Do(func() {
		s.cancel()
		select {
		case err := <-s.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("scheduler did not stop within 30s")
		}
	})
}

// nodePool is a pool of testnode tasks: a slow generator and a counter.
func nodePool(name string, n int) mesos.Pool {
	return mesos.Pool{Name: name, Instances: n, CPUs: 0.5, Mem: 128, Retries: 3, Env: map[string]string{
		"SLUICE_NODE_INSECURE":          "1", // the test nodes run without node certificates
		"SLUICE_TEST_RECORDS":           "100000000",
		"SLUICE_TEST_RATE":              "200",
		"SLUICE_TEST_KEYS":              "1000",
		"SLUICE_TEST_GEN_PARALLELISM":   "1",
		"SLUICE_TEST_COUNT_PARALLELISM": "3",
	}}
}

// shellPool is a pool of /bin/sh -c tasks.
func shellPool(name string, n int, script string, retries int) mesos.Pool {
	return mesos.Pool{Name: name, Instances: n, CPUs: 0.1, Mem: 32, Retries: retries, Command: mesos.Command{Value: script, Shell: true}}
}

// waitMaster waits for a condition on the master's state.
func (e *env) waitMaster(timeout time.Duration, what string, cond func() bool) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := e.master.WaitUntil(ctx, cond); err != nil {
		e.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// running returns the IDs of the tasks running on the master.
func (e *env) running() map[string]mesostest.Task {
	out := map[string]mesostest.Task{}
	for _, t := range e.master.Tasks() {
		if t.Active && t.ProcessRunning && t.State.String() == "TASK_RUNNING" {
			out[t.ID] = t
		}
	}
	return out
}

// watchProcesses records the highest number of live task processes until
// the test ends, evaluated on every change of the master's state.
func (e *env) watchProcesses() func() int {
	var mu sync.Mutex
	peak := 0
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.master.WaitUntil(ctx, func() bool {
			n := e.master.RunningProcesses()
			mu.Lock()
			peak = max(peak, n)
			mu.Unlock()
			return false
		})
	}()
	e.t.Cleanup(func() { cancel(); <-done })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// readStatus reads the status the leader published to Consul.
func (e *env) readStatus() (mesosstatus.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return mesosstatus.ReadStatus(ctx, e.consul.Client(), e.cluster)
}

// members returns the nodes registered and passing in Consul.
func (e *env) members() []*api.ServiceEntry {
	entries, _, err := e.consul.Client().Health().Service(e.cluster, "", true, nil)
	if err != nil {
		e.t.Logf("consul: %v", err)
		return nil
	}
	return entries
}

// waitMembersAreTasks waits until the passing members of the cluster in
// Consul are exactly the running tasks: every node task joined, and every
// node that is gone has left (or its TTL check expired).
func (e *env) waitMembersAreTasks() {
	e.t.Helper()
	var nodes, tasks []string
	sluicetest.WaitEvery(e.t, waitTimeout, 20*time.Millisecond, "the Consul members to be the running tasks", func() bool {
		nodes = nodes[:0]
		for _, m := range e.members() {
			nodes = append(nodes, m.Service.Meta["sluice_id"])
		}
		slices.Sort(nodes)
		tasks = slices.Sorted(maps.Keys(e.running()))
		return len(tasks) > 0 && slices.Equal(nodes, tasks)
	})
}

// nodeStatus is the part of a node's GET /v1/status the tests read.
type nodeStatus struct {
	Node      string
	Members   []json.RawMessage
	Operators []struct {
		Name      string
		Instances []struct {
			Index     int
			State     string
			Processed int64
		}
	}
}

func getJSON(url string, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// processed sums the processed counts of op's instances over the nodes.
// A node's own view is GET /v1/node (GET /v1/status before the control API
// grew a cluster-wide status).
func (e *env) processed(op string) int64 {
	var sum int64
	for _, m := range e.members() {
		var st nodeStatus
		base := "http://" + m.Service.Meta["sluice_http"]
		if err := getJSON(base+"/v1/node", &st); err != nil {
			if err := getJSON(base+"/v1/status", &st); err != nil {
				continue
			}
		}
		for _, o := range st.Operators {
			if o.Name != op {
				continue
			}
			for _, in := range o.Instances {
				if in.State == "running" {
					sum += in.Processed
				}
			}
		}
	}
	return sum
}

// pending returns the pending reasons in a status.
func pending(st mesosstatus.Status) []string {
	var out []string
	for _, ts := range st.Tasks {
		if ts.Pending != "" {
			out = append(out, ts.Pending)
		}
	}
	return out
}

// contextUntil returns a context that ends when stop is closed or cancel
// is called.
func contextUntil(stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// localAgent completes an agent for tests whose tasks are nodes: the
// tasks run on this machine, so the agent's hostname (where nodes bind)
// is 127.0.0.1, and it offers ports (10 free ones) unless it has some.
func localAgent(a mesostest.AgentSpec) mesostest.AgentSpec {
	if a.Hostname == "" {
		a.Hostname = "127.0.0.1"
	}
	if len(a.Ports) == 0 && a.FreePorts == 0 {
		a.FreePorts = 10
	}
	return a
}
