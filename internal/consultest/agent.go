package consultest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/toolbin"
)

// Timeouts of the agent's life cycle.
const (
	readyTimeout = 30 * time.Second // start to leader elected and node in the catalog
	stopTimeout  = 5 * time.Second  // SIGTERM to exit, before SIGKILL
	startTries   = 3                // fresh ports after "address already in use"
)

// Ports are the ports a dev agent listens on, all on 127.0.0.1. The others
// (DNS, HTTPS or HTTP, gRPC, gRPC TLS, serf WAN) are disabled.
type Ports struct {
	HTTP    int // HTTP API; its HTTPS port with Options.TLS (and no HTTP)
	SerfLAN int // gossip, TCP and UDP
	Server  int // server RPC
}

// Agent is a Consul dev agent run by a test. Its methods must be called
// from the test's goroutine (they call t.Fatal on failure), except Addr,
// Client and Ports, which are safe anywhere.
type Agent struct {
	t       TB
	bin     string
	dir     string // t.TempDir(): config, data, log, TMPDIR
	logPath string
	ports   Ports
	client  *api.Client
	opts    Options

	mgmtToken             string   // Options.ACL
	tlsFiles              TLSFiles // Options.TLS
	serverCert, serverKey string   // Options.TLS: the agent's certificate

	runs proctest.Runs
}

// Start runs a Consul dev agent on 127.0.0.1 with free ports and returns
// once it has a leader and answers; the process group is killed and its
// files removed when the test ends. Start fails t if the binary is missing
// or the agent is not ready within 30s.
func Start(t TB) *Agent {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with ACLs and/or TLS (Options).
func StartWith(t TB, o Options) *Agent {
	t.Helper()
	a := &Agent{t: t, bin: Binary(t), dir: t.TempDir(), opts: o}
	a.logPath = filepath.Join(a.dir, "consul.log")
	a.runs = proctest.Runs{LogPath: a.logPath, Grace: stopTimeout}
	t.Cleanup(a.cleanup)
	if err := a.prepareSecurity(); err != nil {
		t.Fatalf("consultest: %v", err)
	}

	var err error
	for try := 1; try <= startTries; try++ {
		if a.ports, err = freePorts(); err != nil {
			t.Fatalf("consultest: pick ports: %v", err)
		}
		if err = a.start(); err == nil {
			cfg, err := a.apiConfig(0)
			if err == nil {
				a.client, err = api.NewClient(cfg)
			}
			if err != nil {
				t.Fatalf("consultest: api client: %v", err)
			}
			return a
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
		t.Logf("consultest: try %d: %v; retrying with other ports", try, err)
	}
	t.Fatalf("consultest: start consul agent: %v\n%s", err, a.logTail())
	return nil
}

// Addr returns the host:port of the agent's HTTP API.
func (a *Agent) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(a.ports.HTTP)) }

// Client returns an API client for the agent (no timeout: bound requests
// with QueryOptions.WithContext), with the management token under
// Options.ACL and the client certificate under Options.TLS.
func (a *Agent) Client() *api.Client { return a.client }

// Ports returns the agent's ports; they stay the same across Restart.
func (a *Agent) Ports() Ports { return a.ports }

// LogPath returns the file holding the agent's output across restarts.
func (a *Agent) LogPath() string { return a.logPath }

// Stop stops the agent (SIGTERM, then SIGKILL to its process group after
// 5s) and waits for it to exit. Its ports stay remembered for Restart;
// they are free while it is stopped. Stop on a stopped agent does nothing.
func (a *Agent) Stop() { a.runs.Stop() }

// Restart starts a stopped agent again on the same ports and waits until
// it is ready; a running agent is stopped first. The agent comes back with
// no state (dev mode, and its data dir is cleared): no services, no
// checks, a lower Raft index, as after losing a Consul agent.
func (a *Agent) Restart() {
	a.t.Helper()
	a.Stop()
	if err := a.start(); err != nil {
		a.t.Fatalf("consultest: restart consul agent on %s: %v\n%s", a.Addr(), err, a.logTail())
	}
}

func (a *Agent) cleanup() {
	a.runs.Kill()
	if a.t.Failed() {
		a.t.Logf("consultest: consul agent %s log tail (%s):\n%s", a.Addr(), a.logPath, a.logTail())
	}
}

// start runs the agent with the current ports and waits until it is
// ready; on failure the process is killed.
func (a *Agent) start() error {
	// Even a dev agent persists local service registrations in its data
	// dir; a fresh one makes every run start empty.
	if err := os.RemoveAll(filepath.Join(a.dir, "data")); err != nil {
		return fmt.Errorf("clear data dir: %w", err)
	}
	cfg := filepath.Join(a.dir, "agent.hcl")
	if err := os.WriteFile(cfg, []byte(a.config()), 0o644); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	cmd := exec.Command(a.bin, "agent", "-dev", "-bind", "127.0.0.1", "-client", "127.0.0.1", "-config-file", cfg)
	cmd.Dir = a.dir
	cmd.Env = append(os.Environ(), "TMPDIR="+a.dir)
	ready, err := a.ready()
	if err != nil {
		return err
	}
	if err := a.runs.Start(cmd, readyTimeout, ready); err != nil {
		if strings.Contains(a.logTail(), "address already in use") {
			err = fmt.Errorf("%w (address already in use)", err)
		}
		return err
	}
	return nil
}

// config is the agent's HCL: ports picked by freePorts, everything that
// would open another port or reach the network disabled, and Options.
func (a *Agent) config() string {
	httpPort, httpsPort := a.ports.HTTP, -1
	if a.opts.TLS {
		httpPort, httpsPort = -1, a.ports.HTTP
	}
	return fmt.Sprintf(`
node_name            = "consultest"
data_dir             = %q
log_level            = "DEBUG"
disable_update_check = true
enable_script_checks = false
ui_config { enabled = false }
connect { enabled = false }
ports {
  http     = %d
  serf_lan = %d
  server   = %d
  https    = %d
  grpc     = -1
  grpc_tls = -1
  dns      = -1
  serf_wan = -1
}
`, filepath.Join(a.dir, "data"), httpPort, a.ports.SerfLAN, a.ports.Server, httpsPort) + a.securityConfig()
}

// ready returns the agent's readiness probe: it has a leader and its own
// node is in the catalog (it has synced).
func (a *Agent) ready() (func() error, error) {
	cfg, err := a.apiConfig(2 * time.Second)
	if err != nil {
		return nil, err
	}
	probe, err := api.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	return func() error {
		switch leader, err := probe.Status().Leader(); {
		case err != nil:
			return err
		case leader == "":
			return errors.New("no leader yet")
		}
		switch nodes, _, err := probe.Catalog().Nodes(nil); {
		case err != nil:
			return err
		case len(nodes) == 0:
			return errors.New("own node not in the catalog yet")
		}
		return nil
	}, nil
}

func (a *Agent) logTail() string {
	b, err := os.ReadFile(a.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return toolbin.Tail(string(b), 60)
}

// freePorts picks distinct free ports on 127.0.0.1: HTTP and Server free
// for TCP, SerfLAN for both TCP and UDP. The listeners are held until all
// are picked, then closed for the agent to bind (a small window in which
// another process could take one; Start then retries).
func freePorts() (Ports, error) {
	var closers []func() error
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	pick := func(udp bool) (int, error) {
		for range 20 {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return 0, err
			}
			closers = append(closers, l.Close)
			port := l.Addr().(*net.TCPAddr).Port
			if !udp {
				return port, nil
			}
			pc, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				continue // UDP side taken: keep the TCP one held and try another
			}
			closers = append(closers, pc.Close)
			return port, nil
		}
		return 0, errors.New("no port free for both TCP and UDP")
	}
	var ps Ports
	var err error
	if ps.HTTP, err = pick(false); err != nil {
		return Ports{}, err
	}
	if ps.SerfLAN, err = pick(true); err != nil {
		return Ports{}, err
	}
	if ps.Server, err = pick(false); err != nil {
		return Ports{}, err
	}
	return ps, nil
}
