package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/proctest"
)

// nodeBinary is the testnode binary built by TestMain.
var nodeBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if nodeBinary, err = proctest.Build(dir, "github.com/sluicehq/sluice/internal/testnode", raceEnabled); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// node is one running testnode process.
type node struct {
	id     string
	http   string
	data   string
	events string
	proc   *proctest.Process
}

// cluster is a set of node processes sharing a Consul agent and flags.
type cluster struct {
	t      *testing.T
	consul string
	flags  []string
	dir    string
	mu     sync.Mutex
	nodes  map[string]*node
	// nodeFlags, when set, adds flags of one node (its certificate, say).
	nodeFlags func(id string) []string
}

func newCluster(t *testing.T, consulAddr string, flags ...string) *cluster {
	if lv := os.Getenv("SLUICE_TEST_LOG_LEVEL"); lv != "" {
		flags = append([]string{"-log-level", lv}, flags...)
	}
	c := &cluster{t: t, consul: consulAddr, flags: flags, dir: t.TempDir(), nodes: map[string]*node{}}
	t.Cleanup(c.keepLogs)
	return c
}

// keepLogs copies the node logs of a failed test to
// $SLUICE_ARTIFACTS/<test name> when that is set (the temp dir goes).
func (c *cluster) keepLogs() {
	dir := os.Getenv("SLUICE_ARTIFACTS")
	if dir == "" || !c.t.Failed() {
		return
	}
	dst := filepath.Join(dir, strings.ReplaceAll(c.t.Name(), "/", "_"), time.Now().Format("150405"))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		c.t.Log(err)
		return
	}
	logs, _ := filepath.Glob(filepath.Join(c.dir, "*.log"))
	for _, l := range logs {
		if b, err := os.ReadFile(l); err == nil {
			err = os.WriteFile(filepath.Join(dst, filepath.Base(l)), b, 0o644)
			if err != nil {
				c.t.Log(err)
			}
		}
	}
	c.t.Logf("node logs kept in %s", dst)
}

// start launches node id and waits until it reports ready.
func (c *cluster) start(id string) *node {
	c.t.Helper()
	n := &node{id: id, events: filepath.Join(c.dir, "events.jsonl")}
	args := append([]string{"-consul", c.consul, "-node-insecure", "-events", n.events}, c.flags...)
	if c.nodeFlags != nil {
		args = append(args, c.nodeFlags(id)...)
	}
	n.proc, n.data = proctest.StartNode(c.t, nodeBinary, c.dir, id, args...)
	n.http = n.proc.HTTP
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
	return n
}

// kill sends SIGKILL to the node's process group and waits for it.
func (n *node) kill() { n.proc.Kill() }

// stop sends SIGTERM (graceful leave) and waits for the process to exit.
func (c *cluster) stop(id string) {
	c.t.Helper()
	n := c.nodes[id]
	if err := n.proc.Stop(90 * time.Second); err != nil {
		c.t.Fatalf("node %s: %v\n%s", id, err, c.logTail(id))
	}
	c.mu.Lock()
	delete(c.nodes, id)
	c.mu.Unlock()
}

// crash kills node id with SIGKILL and returns the time of the kill.
func (c *cluster) crash(id string) time.Time {
	n := c.nodes[id]
	at := time.Now()
	n.kill()
	c.mu.Lock()
	delete(c.nodes, id)
	c.mu.Unlock()
	return at
}

// logTail returns the end of a node's log.
func (c *cluster) logTail(id string) string { return proctest.LogTail(filepath.Join(c.dir, id+".log")) }

// status fetches a node's /v1/status.
func (n *node) status() (api.NodeStatus, error) {
	var st api.NodeStatus
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.http+"/v1/node", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// eachInstance calls fn for every instance of op on every running node
// that answers.
func (c *cluster) eachInstance(op string, fn func(n *node, in api.NodeInstance)) {
	c.mu.Lock()
	nodes := make([]*node, 0, len(c.nodes))
	for _, n := range c.nodes {
		nodes = append(nodes, n)
	}
	c.mu.Unlock()
	for _, n := range nodes {
		st, err := n.status()
		if err != nil {
			continue
		}
		for _, o := range st.Operators {
			if o.Name == op {
				for _, in := range o.Instances {
					fn(n, in)
				}
			}
		}
	}
}

// processed sums the Processed count of op's running instances over the
// running nodes (a count moves with its instance).
func (c *cluster) processed(op string) (sum int64) {
	c.eachInstance(op, func(_ *node, in api.NodeInstance) {
		if in.State == "running" {
			sum += in.Processed
		}
	})
	return sum
}

// produced sums what op's running instances produced, over the running
// nodes (like processed: the count moves with its instance, so a released
// instance's count is also in its new owner's).
func (c *cluster) produced(op string) (sum int64) {
	c.eachInstance(op, func(_ *node, in api.NodeInstance) {
		if in.State == "running" {
			sum += in.Produced
		}
	})
	return sum
}

// instanceProgress returns the processed count of every running instance
// of op, by "node/epoch.index".
func (c *cluster) instanceProgress(op string) map[string]int64 {
	out := map[string]int64{}
	c.eachInstance(op, func(n *node, in api.NodeInstance) {
		if in.State == "running" {
			out[fmt.Sprintf("%s/%d.%d", n.id, in.Epoch, in.Index)] = in.Processed
		}
	})
	return out
}

// waitFor polls cond until it holds or timeout passes.
func (c *cluster) waitFor(timeout time.Duration, what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			c.dumpLogs()
			c.t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dumpLogs logs each running node's members, pending handoffs, checkpoint
// account and instances, then each node's log tail (the status first: CI
// shows the head of a long output).
func (c *cluster) dumpLogs() {
	c.mu.Lock()
	nodes := make([]*node, 0, len(c.nodes))
	for _, n := range c.nodes {
		nodes = append(nodes, n)
	}
	c.mu.Unlock()
	for _, n := range nodes {
		st, err := n.status()
		if err != nil {
			c.t.Logf("--- %s status: %v", n.id, err)
			continue
		}
		var members, insts []string
		for _, m := range st.Members {
			members = append(members, m.ID)
		}
		for _, op := range st.Operators {
			for _, in := range op.Instances {
				insts = append(insts, fmt.Sprintf("%s/%d.%d %s groups [%d,%d) in %d out %d queued %d", op.Name, in.Epoch, in.Index, in.State, in.FirstGroup, in.EndGroup, in.Processed, in.Produced, in.Queued))
			}
		}
		ck := "none"
		if st.Checkpoints != nil {
			b, _ := json.Marshal(st.Checkpoints)
			ck = string(b)
		}
		c.t.Logf("--- %s status: members %v; pending %v; buffered %d; checkpoints %s; instances:\n%s", n.id, members, st.Pending, st.Buffered, ck, strings.Join(insts, "\n"))
	}
	entries, _ := os.ReadDir(c.dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			c.t.Logf("--- %s ---\n%s", e.Name(), c.logTail(strings.TrimSuffix(e.Name(), ".log")))
		}
	}
}

// events reads every node's events.
func (c *cluster) events() []status.Event {
	c.t.Helper()
	f, err := os.Open(filepath.Join(c.dir, "events.jsonl"))
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	var out []status.Event
	dec := json.NewDecoder(f)
	for {
		var e status.Event
		if err := dec.Decode(&e); err != nil {
			break // EOF, or a line cut short by a SIGKILL
		}
		out = append(out, e)
	}
	return out
}

// checkNoDoubleActivity fails the test if an instance was active on two
// nodes at the same time. A killed node's instance counts as active until
// the kill.
func checkNoDoubleActivity(t *testing.T, events []status.Event, killedAt map[string]time.Time) {
	t.Helper()
	type span struct {
		node       string
		start, end time.Time
	}
	spans := map[string][]*span{}
	open := map[string]*span{}
	for _, e := range events {
		if e.Operator == "" {
			continue
		}
		k := fmt.Sprintf("%s/%d.%d", e.Operator, e.Epoch, e.Index)
		if e.What == "active" {
			s := &span{node: e.Node, start: e.Time, end: time.Now().Add(time.Hour)}
			if at, ok := killedAt[e.Node]; ok {
				s.end = at
			}
			spans[k] = append(spans[k], s)
			open[k+"@"+e.Node] = s
		} else if s := open[k+"@"+e.Node]; s != nil {
			s.end = e.Time
			delete(open, k+"@"+e.Node)
		}
	}
	n := 0
	for k, ss := range spans {
		sort.Slice(ss, func(i, j int) bool { return ss[i].start.Before(ss[j].start) })
		for i := 1; i < len(ss); i++ {
			if ss[i].start.Before(ss[i-1].end) {
				t.Errorf("instance %s active on %s from %s while active on %s until %s", k, ss[i].node,
					ss[i].start.Format("15:04:05.000"), ss[i-1].node, ss[i-1].end.Format("15:04:05.000"))
			}
		}
		n += len(ss)
	}
	t.Logf("checked %d activations of %d instances: none overlapping", n, len(spans))
}
