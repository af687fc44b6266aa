package natstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/toolbin"
)

// Timeouts of the server's life cycle.
const (
	readyTimeout = 30 * time.Second // start to /healthz answering ok
	stopTimeout  = 10 * time.Second // SIGTERM to exit, before SIGKILL
	pauseTimeout = 10 * time.Second // SIGSTOP to every thread stopped
	startTries   = 3                // fresh ports after a port clash
	probeTimeout = 2 * time.Second  // one readiness probe
)

// Options configure a server. The zero value is a server without
// authentication or TLS.
type Options struct {
	// User and Password, when set, are the one user the server accepts.
	User, Password string
	// Token, when set, is the authorization token the server requires
	// (instead of User and Password).
	Token string
	// TLS, when set, makes the client port TLS-only.
	TLS *TLS
}

// TLS is a server's TLS material.
type TLS struct {
	// Cert and Key are the server's certificate (valid for 127.0.0.1)
	// and its key.
	Cert, Key string
	// CA is the bundle that signs client certificates; with
	// VerifyClients the server requires one.
	CA            string
	VerifyClients bool
	// ClientCert and ClientKey, when set, are the certificate the
	// package's own clients (Connect, CreateStream) present.
	ClientCert, ClientKey string
}

// Server is a nats-server run by a test. Its methods must be called from
// the test's goroutine (they call t.Fatal on failure), except the
// accessors (URL, Port, StoreDir, LogPath), which are safe anywhere.
type Server struct {
	t       TB
	bin     string
	opts    Options
	dir     string // t.TempDir(): store, log
	logPath string
	port    int // client port
	monPort int // monitoring port (/healthz)

	runs proctest.Runs
}

// Start runs nats-server with JetStream on 127.0.0.1 with free ports and
// returns once it is ready (well under a second); the process group is
// killed when the test ends. Start fails t if the binary is missing or the
// server is not ready within 30s.
func Start(t TB, opts Options) *Server {
	t.Helper()
	s := &Server{t: t, bin: Binary(t), opts: opts, dir: t.TempDir()}
	s.logPath = filepath.Join(s.dir, "nats-server.log")
	s.runs = proctest.Runs{LogPath: s.logPath, Grace: stopTimeout}
	t.Cleanup(s.cleanup)
	var err error
	for try := 1; try <= startTries; try++ {
		if s.port, s.monPort, err = freePorts(); err != nil {
			t.Fatalf("natstest: pick ports: %v", err)
		}
		began := time.Now()
		if err = s.start(); err == nil {
			t.Logf("natstest: nats-server ready at %s in %v", s.URL(), time.Since(began).Round(time.Millisecond))
			return s
		}
		if !errors.Is(err, errPortClash) {
			break
		}
		t.Logf("natstest: try %d: %v; retrying with other ports", try, err)
	}
	t.Fatalf("natstest: start nats-server: %v\n%s", err, s.logTail())
	return nil
}

// URL returns the client URL, "nats://127.0.0.1:PORT" ("tls://…" with TLS).
func (s *Server) URL() string {
	scheme := "nats"
	if s.opts.TLS != nil {
		scheme = "tls"
	}
	return scheme + "://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Port returns the client port; it stays the same across restarts.
func (s *Server) Port() int { return s.port }

// StoreDir returns the JetStream store directory, kept across restarts.
func (s *Server) StoreDir() string { return filepath.Join(s.dir, "jetstream") }

// LogPath returns the file holding the server's output across restarts.
func (s *Server) LogPath() string { return s.logPath }

// Stop stops the server (SIGTERM, then SIGKILL to its process group after
// 10s) and waits for it to exit; connections to it are then refused. Its
// port and store stay for Start. Stop on a stopped server does nothing.
func (s *Server) Stop() { s.runs.Stop() }

// Start starts a stopped server again on the same ports with the same
// store (streams and their messages are kept) and waits until it is
// ready. Start on a running server does nothing.
func (s *Server) Start() {
	s.t.Helper()
	if s.runs.Running() {
		return
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("natstest: restart nats-server on %s: %v\n%s", s.URL(), err, s.logTail())
	}
}

// Pause freezes the server (SIGSTOP to its process group): the kernel
// still accepts connections and buffers requests, but nothing answers, as
// with a hung server or a network partition. Resume undoes it; Stop and
// the cleanup resume a paused server first.
func (s *Server) Pause() {
	s.t.Helper()
	if err := s.runs.Pause(pauseTimeout); err != nil {
		s.t.Fatalf("natstest: %v", err)
	}
}

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.runs.Signal(syscall.SIGCONT) }

// ClientOptions returns the nats.go options a client of this server needs:
// its credentials and, with TLS, the CA that signs the server's
// certificate and the client certificate of TLS.ClientCert.
func (s *Server) ClientOptions() []nats.Option {
	var o []nats.Option
	switch {
	case s.opts.Token != "":
		o = append(o, nats.Token(s.opts.Token))
	case s.opts.User != "":
		o = append(o, nats.UserInfo(s.opts.User, s.opts.Password))
	}
	if s.opts.TLS != nil && s.opts.TLS.CA != "" {
		o = append(o, nats.RootCAs(s.opts.TLS.CA))
	}
	if s.opts.TLS != nil && s.opts.TLS.ClientCert != "" {
		o = append(o, nats.ClientCert(s.opts.TLS.ClientCert, s.opts.TLS.ClientKey))
	}
	return o
}

// Connect returns a client of the server with ClientOptions and extra,
// closed when the test ends. It fails t if the client cannot connect.
func (s *Server) Connect(t TB, extra ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.URL(), append(s.ClientOptions(), extra...)...)
	if err != nil {
		t.Fatalf("natstest: connect to %s: %v", s.URL(), err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// CreateStream creates (or updates) a stream with cfg on the server, with
// a client of its own, and returns its info. It fails t on error.
func (s *Server) CreateStream(t TB, cfg jetstream.StreamConfig) *jetstream.StreamInfo {
	t.Helper()
	nc := s.Connect(t)
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("natstest: jetstream: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		t.Fatalf("natstest: create stream %q: %v", cfg.Name, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatalf("natstest: stream %q info: %v", cfg.Name, err)
	}
	return info
}

func (s *Server) cleanup() {
	s.runs.Kill() // SIGKILL works on a stopped (paused) process too
	if s.t.Failed() {
		s.t.Logf("natstest: nats-server %s log tail (%s):\n%s", s.URL(), s.logPath, s.logTail())
	}
}

// errPortClash marks a start that failed because a port was taken.
var errPortClash = errors.New("a port is taken")

// start runs nats-server with the current ports and waits until it is
// ready; on failure the process is killed.
func (s *Server) start() error {
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Dir = s.dir
	cmd.Env = os.Environ()
	if err := s.runs.Start(cmd, readyTimeout, s.ready); err != nil {
		if strings.Contains(s.logTail(), "address already in use") {
			err = fmt.Errorf("%w: %w", errPortClash, err)
		}
		return err
	}
	return nil
}

// args are nats-server's flags.
func (s *Server) args() []string {
	a := []string{
		"-a", "127.0.0.1", "-p", strconv.Itoa(s.port),
		"-m", strconv.Itoa(s.monPort), // the monitoring port, on -a's address: readiness
		"-js", "-sd", s.StoreDir(),
		"-n", "natstest",
	}
	switch {
	case s.opts.Token != "":
		a = append(a, "--auth", s.opts.Token)
	case s.opts.User != "":
		a = append(a, "--user", s.opts.User, "--pass", s.opts.Password)
	}
	if tl := s.opts.TLS; tl != nil {
		a = append(a, "--tls", "--tlscert", tl.Cert, "--tlskey", tl.Key)
		if tl.CA != "" {
			a = append(a, "--tlscacert", tl.CA)
		}
		if tl.VerifyClients {
			a = append(a, "--tlsverify")
		}
	}
	return a
}

// ready is the readiness probe: the monitoring endpoint's /healthz, which
// answers 200 once the server accepts clients and JetStream is up.
func (s *Server) ready() error {
	client := http.Client{Timeout: probeTimeout}
	resp, err := client.Get("http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.monPort)) + "/healthz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/healthz: %s", resp.Status)
	}
	return nil
}

func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return toolbin.Tail(string(b), 60)
}

// freePorts picks two distinct free TCP ports on 127.0.0.1 (listening on
// port 0). The listeners are closed for nats-server to bind: a small
// window in which another process could take one; Start then retries.
func freePorts() (client, monitor int, err error) {
	var ports [2]int
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, err
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports[0], ports[1], nil
}
