package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/toolbin"
)

// The server's superuser and its password.
const (
	User     = "sluice"
	Password = "pgtest-password"
	Database = "postgres"
)

// Timeouts of the server's life cycle.
const (
	readyTimeout = 60 * time.Second // start to a connection succeeding
	stopTimeout  = 10 * time.Second // SIGTERM to exit, before SIGKILL
	pauseTimeout = 10 * time.Second // SIGSTOP to every thread stopped
	probeTimeout = 2 * time.Second  // one readiness probe
	startTries   = 3                // fresh ports after a port clash
)

// Server is a PostgreSQL server run by a test. Its methods must be called
// from the test's goroutine (they call t.Fatal on failure), except the
// accessors (DSN, Port, Dir, LogPath), which are safe anywhere.
type Server struct {
	t       TB
	bin     string // directory of initdb and postgres
	dir     string // t.TempDir(): data, socket, log
	logPath string
	port    int
	cred    *syscall.Credential // the user to run as; nil: ours
	opts    Options

	runs proctest.Runs
}

// Options are the server settings a test may ask Start for; the zero
// value is the default server.
type Options struct {
	// Logical sets wal_level=logical, with max_replication_slots and
	// max_wal_senders at 10, for tests of logical replication
	// (change-data capture). The default server has wal_level=replica.
	Logical bool
}

// Logical is Options{Logical: true}.
func Logical() Options { return Options{Logical: true} }

// Start runs initdb and postgres on 127.0.0.1 with a free port and returns
// once a connection succeeds; the process group is killed and its files
// removed when the test ends. Start fails t if there are no server
// binaries or the server is not ready within 60s. Options, if given,
// change the server's settings (the last one counts).
func Start(t TB, opts ...Options) *Server {
	t.Helper()
	s := &Server{t: t, bin: BinDir(t), dir: t.TempDir()}
	for _, o := range opts {
		s.opts = o
	}
	s.logPath = filepath.Join(s.dir, "postgres.log")
	s.runs = proctest.Runs{LogPath: s.logPath, Grace: stopTimeout}
	cred, err := runAs(s.dir)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	s.cred = cred
	t.Cleanup(s.cleanup)
	if err := s.initdb(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	for try := 1; try <= startTries; try++ {
		if s.port, err = freePort(); err != nil {
			t.Fatalf("pgtest: pick a port: %v", err)
		}
		began := time.Now()
		if err = s.start(); err == nil {
			t.Logf("pgtest: postgres ready on 127.0.0.1:%d in %v", s.port, time.Since(began).Round(time.Millisecond))
			return s
		}
		if !strings.Contains(s.logTail(), "could not bind") && !strings.Contains(s.logTail(), "already in use") {
			break
		}
		t.Logf("pgtest: try %d: %v; retrying with another port", try, err)
	}
	t.Fatalf("pgtest: start postgres: %v\n%s", err, s.logTail())
	return nil
}

// DSN returns the URL of the server's database as its superuser, without
// TLS: "postgres://sluice:...@127.0.0.1:PORT/postgres?sslmode=disable".
func (s *Server) DSN() string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(User, Password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), Path: "/" + Database, RawQuery: "sslmode=disable"}
	return u.String()
}

// Port returns the server's TCP port; it stays the same across restarts.
func (s *Server) Port() int { return s.port }

// Dir returns the server's directory (its data is under Dir()/data).
func (s *Server) Dir() string { return s.dir }

// LogPath returns the file holding the server's output across restarts.
func (s *Server) LogPath() string { return s.logPath }

// Connect returns a connection to the server's database, closed when the
// test ends; it fails t if there is none within 10 s.
func (s *Server) Connect() *pgx.Conn {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		s.t.Fatalf("pgtest: connect to %s: %v", s.DSN(), err)
	}
	s.t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// Exec runs sql on a fresh connection, failing t on error.
func (s *Server) Exec(sql string, args ...any) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		s.t.Fatalf("pgtest: connect: %v", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		s.t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// QueryInt returns the one integer sql selects, on a fresh connection
// (of at most 2 s), or an error (the server down, paused, or the query
// failing); for tests polling the server while it may be away.
func (s *Server) QueryInt(sql string, args ...any) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return 0, err
	}
	defer c.Close(context.Background())
	var n int64
	if err := c.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("%s: %w", sql, err)
	}
	return n, nil
}

// Stop stops the server cleanly (pg_ctl stop -m fast: sessions are ended,
// a shutdown checkpoint written) and waits for it to exit; connections to
// it are then refused. If that fails the process group gets SIGTERM, then
// SIGKILL after 10s. Its port and data stay for Start. Stop on a stopped
// server does nothing.
func (s *Server) Stop() {
	if !s.runs.Running() {
		return
	}
	s.Resume() // in case it is paused
	cmd := exec.Command(filepath.Join(s.bin, "pg_ctl"), "stop", "-m", "fast", "-w", "-t", "30", "-D", filepath.Join(s.dir, "data"))
	cmd.Env = s.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Logf("pgtest: pg_ctl stop: %v: %s", err, out)
	}
	s.runs.Stop()
}

// Start starts a stopped server again on the same port and with the same
// data, and waits until it accepts connections. Start on a running server
// does nothing.
func (s *Server) Start() {
	s.t.Helper()
	if s.runs.Running() {
		return
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("pgtest: restart postgres on port %d: %v\n%s", s.port, err, s.logTail())
	}
}

// Pause freezes the server: SIGSTOP to the postmaster and then to each of
// its children (each backend is a session leader of its own, so the
// postmaster's process group alone leaves the open connections served).
// The kernel still accepts connections and buffers requests, but nothing
// answers, as with a hung server or a network partition. Resume undoes
// it; Stop and the cleanup resume a paused server first.
func (s *Server) Pause() {
	s.t.Helper()
	if err := s.runs.Pause(pauseTimeout); err != nil {
		s.t.Fatalf("pgtest: %v", err)
	}
	for _, pid := range proctest.Children(s.runs.Pid()) {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
}

// Resume continues a paused server (SIGCONT to its children, then to the
// postmaster).
func (s *Server) Resume() {
	for _, pid := range proctest.Children(s.runs.Pid()) {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	s.runs.Signal(syscall.SIGCONT)
}

func (s *Server) cleanup() {
	s.Resume() // the backends, which are not in the postmaster's group
	s.runs.Kill()
	if s.t.Failed() {
		s.t.Logf("pgtest: postgres on port %d log tail (%s):\n%s", s.port, s.logPath, s.logTail())
	}
}

// initdb creates the cluster in dir/data with the superuser User.
func (s *Server) initdb() error {
	pw := filepath.Join(s.dir, "pwfile")
	if err := os.WriteFile(pw, []byte(Password+"\n"), 0o600); err != nil {
		return fmt.Errorf("write the password file: %w", err)
	}
	if err := s.own(pw); err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(s.bin, "initdb"), "-D", filepath.Join(s.dir, "data"), "-U", User,
		"--pwfile="+pw, "--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync")
	cmd.Dir = s.dir
	cmd.Env = s.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, toolbin.Tail(string(out), 30))
	}
	return nil
}

// start runs postgres on the current port and waits until it is ready; on
// failure the process is killed.
func (s *Server) start() error {
	args := []string{"-D", filepath.Join(s.dir, "data"),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port=" + strconv.Itoa(s.port),
		"-c", "unix_socket_directories=" + s.dir,
		// fsync off: only a machine crash could lose data. Commits stay
		// synchronous: a test that kills the server loses none it was told
		// of.
		"-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "max_prepared_transactions=16",
		"-c", "logging_collector=off", "-c", "log_min_messages=warning"}
	if s.opts.Logical {
		args = append(args, "-c", "wal_level=logical", "-c", "max_replication_slots=10", "-c", "max_wal_senders=10")
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), args...)
	cmd.Dir = s.dir
	cmd.Env = s.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	dsn := s.DSN()
	return s.runs.Start(cmd, readyTimeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		return c.Ping(ctx)
	})
}

// env is the test's environment without PG* variables (which would
// configure the server's tools behind our back), in the C locale.
func (s *Server) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "PG") || name == "HOME" || strings.HasPrefix(name, "LC_") || name == "LANG" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+s.dir, "LANG=C")
}

// own gives path to the user the server runs as.
func (s *Server) own(path string) error {
	if s.cred == nil {
		return nil
	}
	if err := os.Chown(path, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
		return fmt.Errorf("chown %s to the postgres user: %w", path, err)
	}
	return nil
}

// runAs returns the credential to run the server with: nil unless we are
// root, then Debian's "postgres" user, to whom dir is given, and whose way
// to dir is opened (every parent directory made traversable).
func runAs(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses to: no user \"postgres\" to run it as (%w); install Debian's postgresql package, which creates it", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("user postgres: %w", err)
	}
	if err := os.Chown(dir, int(uid), int(gid)); err != nil {
		return nil, fmt.Errorf("chown %s to postgres: %w", dir, err)
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(p, st.Mode().Perm()|0o001); err != nil {
				return nil, fmt.Errorf("make %s traversable for postgres: %w", p, err)
			}
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return toolbin.Tail(string(b), 60)
}
