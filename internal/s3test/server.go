package s3test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/toolbin"
)

// Timeouts of the server's life cycle.
const (
	readyTimeout = 60 * time.Second // start to an authenticated write succeeding
	stopTimeout  = 10 * time.Second // SIGTERM to exit, before SIGKILL
	startTries   = 3                // fresh ports after a port clash
	probeTimeout = 30 * time.Second // one readiness probe (see waitReady)
)

// Fixed identity of every server: one key with all rights.
const (
	accessKey = "s3test-access-key"
	secretKey = "s3test-secret-key-0123456789abcdef"
	bucket    = "s3test"
	probeKey  = "s3test-ready-probe"
)

// Ports are the TCP ports a server listens on, all on 127.0.0.1.
type Ports struct {
	S3, S3GRPC         int
	Master, MasterGRPC int
	Volume, VolumeGRPC int
	Filer, FilerGRPC   int
	Admin, AdminGRPC   int
}

// list returns the ports in a fixed order.
func (p Ports) list() []int {
	return []int{p.S3, p.S3GRPC, p.Master, p.MasterGRPC, p.Volume, p.VolumeGRPC, p.Filer, p.FilerGRPC, p.Admin, p.AdminGRPC}
}

// Server is a SeaweedFS S3 server run by a test. Its methods must be
// called from the test's goroutine (they call t.Fatal on failure), except
// the accessors (Endpoint, Bucket, AccessKey, SecretKey, Ports, Dir,
// LogPath), which are safe anywhere.
type Server struct {
	t       TB
	bin     string
	dir     string // t.TempDir(): config, data, log, HOME and TMPDIR
	logPath string
	ports   Ports

	runs proctest.Runs
}

// Start runs weed mini on 127.0.0.1 with free ports and returns once the
// bucket accepts authenticated writes (about 5 s); the process group is
// killed and its files removed when the test ends. Start fails t if the
// binary is missing or the server is not ready within 60s.
func Start(t TB) *Server {
	t.Helper()
	s := &Server{t: t, bin: Binary(t), dir: t.TempDir()}
	s.logPath = filepath.Join(s.dir, "weed.log")
	s.runs = proctest.Runs{LogPath: s.logPath, Grace: stopTimeout}
	if err := os.WriteFile(filepath.Join(s.dir, "s3.json"), []byte(identities), 0o600); err != nil {
		t.Fatalf("s3test: write the S3 identities: %v", err)
	}
	t.Cleanup(s.cleanup)

	var err error
	for try := 1; try <= startTries; try++ {
		if s.ports, err = freePorts(); err != nil {
			t.Fatalf("s3test: pick ports: %v", err)
		}
		began := time.Now()
		if err = s.start(); err == nil {
			t.Logf("s3test: weed mini ready at %s in %v", s.Endpoint(), time.Since(began).Round(time.Millisecond))
			return s
		}
		if !errors.Is(err, errPortClash) {
			break
		}
		t.Logf("s3test: try %d: %v; retrying with other ports", try, err)
	}
	t.Fatalf("s3test: start weed mini: %v\n%s", err, s.logTail())
	return nil
}

// identities is the -s3.config file: one identity with every action.
var identities = fmt.Sprintf(`{
  "identities": [{
    "name": "s3test",
    "credentials": [{"accessKey": %q, "secretKey": %q}],
    "actions": ["Admin", "Read", "List", "Tagging", "Write"]
  }]
}
`, accessKey, secretKey)

// Endpoint returns the S3 endpoint URL, "http://127.0.0.1:PORT".
func (s *Server) Endpoint() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.ports.S3))
}

// Bucket returns the name of the bucket created at start.
func (s *Server) Bucket() string { return bucket }

// AccessKey returns the access key ID with full rights on the server.
func (s *Server) AccessKey() string { return accessKey }

// SecretKey returns the secret of AccessKey.
func (s *Server) SecretKey() string { return secretKey }

// Ports returns the server's ports; they stay the same across restarts.
func (s *Server) Ports() Ports { return s.ports }

// Dir returns the server's directory (its data is under Dir()/data).
func (s *Server) Dir() string { return s.dir }

// LogPath returns the file holding the server's output across restarts.
func (s *Server) LogPath() string { return s.logPath }

// Stop stops the server (SIGTERM, then SIGKILL to its process group after
// 10s) and waits for it to exit; connections to it are then refused. Its
// ports and data stay for Start. Stop on a stopped server does nothing.
func (s *Server) Stop() { s.runs.Stop() }

// Start starts a stopped server again on the same ports and with the same
// data (objects put before Stop are there), and waits until it accepts
// writes: about 15 s, as SeaweedFS's master holds back writes for a
// warm-up after a restart (reads work sooner). Start on a running server
// does nothing.
func (s *Server) Start() {
	s.t.Helper()
	if s.runs.Running() {
		return
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("s3test: restart weed mini on %s: %v\n%s", s.Endpoint(), err, s.logTail())
	}
}

// Pause freezes the server (SIGSTOP to its process group): the kernel
// still accepts connections and buffers requests, but nothing answers, as
// with a hung server or a network partition. Resume undoes it; Stop and the
// cleanup resume a paused server first.
func (s *Server) Pause() {
	s.t.Helper()
	if err := s.runs.Pause(pauseTimeout); err != nil {
		s.t.Fatalf("s3test: %v", err)
	}
}

// pauseTimeout bounds the wait for every thread of a paused server to stop.
const pauseTimeout = 10 * time.Second

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() {
	s.t.Helper()
	s.runs.Signal(syscall.SIGCONT)
}

func (s *Server) cleanup() {
	s.runs.Kill() // SIGKILL works on a stopped (paused) process too
	s.removeSockets()
	if s.t.Failed() {
		s.t.Logf("s3test: weed mini %s log tail (%s):\n%s", s.Endpoint(), s.logPath, s.logTail())
	}
}

// errPortClash marks a start that failed because a port was taken.
var errPortClash = errors.New("a port is taken")

// start runs weed with the current ports and waits until it is ready; on
// failure the process is killed.
func (s *Server) start() error {
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Dir = s.dir
	cmd.Env = s.env()
	ready, err := s.ready()
	if err != nil {
		return err
	}
	if err := s.runs.Start(cmd, readyTimeout, ready); err != nil {
		if t := s.logTail(); strings.Contains(t, "is not available on") || strings.Contains(t, "address already in use") {
			err = fmt.Errorf("%w: %w", errPortClash, err)
		}
		return err
	}
	return nil
}

// args are weed's flags: every port explicit (weed moves a port that is
// taken only when it was not given), everything optional off.
func (s *Server) args() []string {
	p := s.ports
	flags := []string{
		"-logtostderr=true", "-v=1", // glog into our log file (not files in TMPDIR), with retries shown
		"mini",
		"-dir=" + filepath.Join(s.dir, "data"),
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-bucket=" + bucket,
		"-s3.config=" + filepath.Join(s.dir, "s3.json"),
		"-master.telemetry=false",
		"-webdav=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
		"-admin.ui=false", "-admin.port.legacy=0",
	}
	for _, f := range []struct {
		name string
		port int
	}{
		{"s3.port", p.S3}, {"s3.port.grpc", p.S3GRPC},
		{"master.port", p.Master}, {"master.port.grpc", p.MasterGRPC},
		{"volume.port", p.Volume}, {"volume.port.grpc", p.VolumeGRPC},
		{"filer.port", p.Filer}, {"filer.port.grpc", p.FilerGRPC},
		{"admin.port", p.Admin}, {"admin.port.grpc", p.AdminGRPC},
	} {
		flags = append(flags, fmt.Sprintf("-%s=%d", f.name, f.port))
	}
	return flags
}

// env is the test's environment without what would configure weed behind
// our back (WEED_* settings, AWS_* credentials it would add as an
// identity, S3_BUCKET), with HOME and TMPDIR in the server's directory so
// that no ~/.seaweedfs file is read and no temporary file escapes.
func (s *Server) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "WEED_") || strings.HasPrefix(name, "AWS_") || strings.HasPrefix(name, "S3_") ||
			name == "HOME" || name == "TMPDIR" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+s.dir, "TMPDIR="+s.dir)
}

// ready returns the server's readiness probe: an authenticated put and
// delete of a probe object in the bucket succeed (S3, filer, volume and
// master all serving, the bucket created).
//
// After a restart the master refuses new volume assignments for 15 s (its
// warm-up: 3 heartbeat pulses of 5 s, fixed in weed mini) while S3 already
// answers; a put waits for that inside weed. The probe waits with it
// rather than giving up and leaving a put behind that could land after
// the probe's delete.
func (s *Server) ready() (func() error, error) {
	client, err := minio.New(net.JoinHostPort("127.0.0.1", strconv.Itoa(s.ports.S3)), &minio.Options{
		Creds:      credentials.NewStaticV4(accessKey, secretKey, ""),
		Region:     "us-east-1",
		MaxRetries: 1,
		Transport:  &http.Transport{ResponseHeaderTimeout: probeTimeout, DisableKeepAlives: true},
	})
	if err != nil {
		return nil, err
	}
	return func() error { return probe(client) }, nil
}

func probe(client *minio.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	body := []byte("ready")
	if _, err := client.PutObject(ctx, bucket, probeKey, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		return fmt.Errorf("probe put: %w", err)
	}
	if err := client.RemoveObject(ctx, bucket, probeKey, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("probe delete: %w", err)
	}
	return nil
}

// removeSockets removes the Unix sockets weed creates in /tmp, named after
// our ports, unless one is live (another process took the port since).
func (s *Server) removeSockets() {
	p := s.ports
	for _, path := range []string{
		fmt.Sprintf("/tmp/seaweedfs-master-grpc-%d.sock", p.MasterGRPC),
		fmt.Sprintf("/tmp/seaweedfs-volume-grpc-%d.sock", p.VolumeGRPC),
		fmt.Sprintf("/tmp/seaweedfs-filer-grpc-%d.sock", p.FilerGRPC),
		fmt.Sprintf("/tmp/seaweedfs-s3-grpc-%d.sock", p.S3GRPC),
		fmt.Sprintf("/tmp/seaweedfs-admin-grpc-%d.sock", p.AdminGRPC),
		fmt.Sprintf("/tmp/seaweedfs-filer-%d.sock", p.Filer),
		fmt.Sprintf("/tmp/seaweedfs-s3-%d.sock", p.S3),
	} {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			continue
		}
		os.Remove(path)
	}
}

func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return toolbin.Tail(string(b), 60)
}

// freePorts picks distinct free TCP ports on 127.0.0.1 below the
// kernel's ephemeral range: weed binds its admin port only after it has
// made many outgoing connections, whose source ports come from that range
// and could take a port picked there. The listeners are held until all
// are picked, then closed for weed to bind (a small window in which
// another process could take one; Start then retries).
func freePorts() (Ports, error) {
	lo, hi := 10000, ephemeralFloor()-1
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ps Ports
	for _, p := range []*int{
		&ps.S3, &ps.S3GRPC, &ps.Master, &ps.MasterGRPC, &ps.Volume, &ps.VolumeGRPC,
		&ps.Filer, &ps.FilerGRPC, &ps.Admin, &ps.AdminGRPC,
	} {
		var err error
		for range 100 {
			port := lo + rand.IntN(hi-lo+1)
			var l net.Listener
			if l, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				ls = append(ls, l)
				*p = port
				break
			}
		}
		if err != nil {
			return Ports{}, fmt.Errorf("no free port in %d-%d: %w", lo, hi, err)
		}
	}
	return ps, nil
}

// ephemeralFloor returns the first port of the kernel's ephemeral range,
// or 32768 (Linux's default) if it cannot be read or starts below 20000,
// leaving too few ports under it; picks may then fall inside the range.
func ephemeralFloor() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 20000 {
		return 32768
	}
	return n
}
