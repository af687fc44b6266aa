package kafkatest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/proctest"
)

// Nodes runs Sluice node processes of one binary: the binary must accept
// -id and -data, and print "ready http=ADDR" on stdout once started (as
// samples/kafka-wordcount does). Each node's stderr goes to <dir>/<id>.log.
// Processes are killed when the test ends (and when the test process dies).
// Methods must be called from the test's goroutine, except Running.
type Nodes struct {
	t    TB
	bin  string
	args []string
	dir  string

	mu    sync.Mutex
	nodes map[string]*Node
}

// Node is one running node process.
type Node struct {
	ID   string
	HTTP string // control API address
	Data string

	proc *proctest.Process
}

// NewNodes returns a set of node processes of bin started with args.
func NewNodes(t TB, bin string, args ...string) *Nodes {
	return &Nodes{t: t, bin: bin, args: args, dir: t.TempDir(), nodes: map[string]*Node{}}
}

// Start launches node id (again, with the same data directory, if it ran
// before) and waits until it is ready.
func (s *Nodes) Start(id string) *Node {
	s.t.Helper()
	p, data := proctest.StartNode(s.t, s.bin, s.dir, id, s.args...)
	n := &Node{ID: id, HTTP: p.HTTP, Data: data, proc: p}
	s.mu.Lock()
	s.nodes[id] = n
	s.mu.Unlock()
	return n
}

// kill sends SIGKILL to the node's process group and waits for it.
func (n *Node) kill() { n.proc.Kill() }

// Kill SIGKILLs node id and returns when its process is gone.
func (s *Nodes) Kill(id string) {
	s.mu.Lock()
	n := s.nodes[id]
	delete(s.nodes, id)
	s.mu.Unlock()
	if n != nil {
		n.kill()
	}
}

// Stop sends node id SIGTERM (a graceful leave) and waits for it to exit.
func (s *Nodes) Stop(id string) {
	s.t.Helper()
	s.mu.Lock()
	n := s.nodes[id]
	delete(s.nodes, id)
	s.mu.Unlock()
	if n == nil {
		return
	}
	if err := n.proc.Stop(90 * time.Second); err != nil {
		s.t.Fatalf("node %s: %v\n%s", id, err, s.LogTail(id))
	}
}

// Running returns the running nodes, by id. Safe from any goroutine.
func (s *Nodes) Running() []*Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Node, 0, len(s.nodes))
	for _, n := range s.nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// LogTail returns the last 4 KB of node id's log.
func (s *Nodes) LogTail(id string) string { return proctest.LogTail(filepath.Join(s.dir, id+".log")) }

// Log returns node id's whole log.
func (s *Nodes) Log(id string) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, id+".log"))
	return string(b)
}

// DumpLogs writes the tail of every node's log to the test log.
func (s *Nodes) DumpLogs() {
	entries, _ := os.ReadDir(s.dir)
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".log"); ok {
			s.t.Logf("--- %s ---\n%s", e.Name(), s.LogTail(id))
		}
	}
}

// Status fetches the node's own status (GET /v1/node).
func (n *Node) Status() (control.Status, error) {
	var st control.Status
	return st, n.get("/v1/node", &st)
}

// ClusterStatus fetches the node's view of the cluster (GET /v1/status).
func (n *Node) ClusterStatus() (api.ClusterStatus, error) {
	var st api.ClusterStatus
	return st, n.get("/v1/status", &st)
}

func (n *Node) get(path string, v any) error {
	body, err := n.fetch(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// Metrics returns the node's Prometheus exposition (GET /metrics).
func (n *Node) Metrics() (string, error) {
	body, err := n.fetch("/metrics")
	return string(body), err
}

// fetch GETs path from the node's control API.
func (n *Node) fetch(path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.HTTP+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return body, nil
}
