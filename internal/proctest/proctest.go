// Package proctest runs the processes tests depend on, each in its own
// process group (SIGKILLed with the test process too) with its output in a
// log file: Service for any process (Consul, SeaweedFS, Jaeger,
// Prometheus: consultest, s3test and the integration tests build on it),
// Start for node processes, ready once they print "ready http=ADDR" on
// stdout (as internal/testnode and samples/kafka-wordcount do), and Build
// for their binaries.
package proctest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ReadyTimeout is how long Start waits for the ready line.
const ReadyTimeout = 60 * time.Second

// ErrExited is returned by Start for a process that exited before it was
// ready.
var ErrExited = errors.New("exited before it was ready")

// Process is a started node process.
type Process struct {
	// HTTP is the address from the process's ready line.
	HTTP string

	svc *Service
}

// Start runs bin with args (stderr appended to logPath) and waits until it
// prints its ready line. On error the process is gone.
func Start(bin string, args []string, logPath string) (*Process, error) {
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("proctest: %w", err)
	}
	svc, err := Spawn(cmd, logPath)
	if err != nil {
		return nil, err
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "ready http="); ok {
				ready <- addr
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t := time.NewTimer(ReadyTimeout)
	defer t.Stop()
	select {
	case addr := <-ready:
		return &Process{HTTP: addr, svc: svc}, nil
	case <-svc.Exited():
		err := svc.Err()
		svc.Kill() // closes the log
		return nil, fmt.Errorf("%w: %v", ErrExited, err)
	case <-t.C:
		svc.Kill()
		return nil, fmt.Errorf("not ready after %v", ReadyTimeout)
	}
}

// Kill SIGKILLs the process group and waits for the process to be gone.
// It may be called more than once.
func (p *Process) Kill() { p.svc.Kill() }

// Signal sends sig to the process group (SIGSTOP and SIGCONT pause and
// resume it: a long GC pause, a frozen VM).
func (p *Process) Signal(sig syscall.Signal) { p.svc.Signal(sig) }

// Stop sends SIGTERM to the process (a graceful leave) and waits up to
// timeout for it to exit; it returns the process's exit error, or an error
// if it is still running (Service.Terminate).
func (p *Process) Stop(timeout time.Duration) error { return p.svc.Terminate(timeout) }

// StartNode is Start for a test's node id: it runs bin with -id id -data
// dir/id/data and args, its stderr in dir/id.log, fails t with the end of
// that log when the node does not get ready, and kills the process when
// the test ends. It returns the process and its data directory (the same
// when id starts again).
func StartNode(t TB, bin, dir, id string, args ...string) (*Process, string) {
	t.Helper()
	data := filepath.Join(dir, id, "data")
	if err := os.MkdirAll(filepath.Dir(data), 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, id+".log")
	p, err := Start(bin, append([]string{"-id", id, "-data", data}, args...), logPath)
	if err != nil {
		t.Fatalf("node %s: %v\n%s", id, err, LogTail(logPath))
	}
	t.Cleanup(p.Kill)
	return p, data
}

// LogTail returns the last 4 KB of the log file at path.
func LogTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Exited waits up to timeout for the process to exit by itself and returns
// its exit error (nil for status 0); exited is false if it still runs.
func (p *Process) Exited(timeout time.Duration) (err error, exited bool) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.svc.Exited():
		return p.svc.Err(), true
	case <-t.C:
		return nil, false
	}
}
