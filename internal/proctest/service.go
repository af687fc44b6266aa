package proctest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// TB is the part of testing.TB that the test harnesses (consultest,
// s3test, kafkatest) use. Tests pass their *testing.T; a program such as
// the benchmark harness passes its own implementation (Fatal and Fatalf
// must not return).
type TB interface {
	Helper()
	Cleanup(func())
	TempDir() string
	Logf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Failed() bool
}

// pollEvery is how often WaitReady asks whether a service is ready.
const pollEvery = 50 * time.Millisecond

// Service is one run of a process a test depends on (a Consul agent, a
// SeaweedFS server, Jaeger, Prometheus, a node process): in its own process
// group, so that stopping it stops its children too, and SIGKILLed if the
// test process dies first. Its output goes to a log file kept across runs.
// Stop and Kill may be called from any goroutine, and more than once.
type Service struct {
	cmd     *exec.Cmd
	log     *os.File
	exited  chan struct{} // closed when cmd.Wait has returned
	waitErr error         // valid once exited is closed
}

// Spawn starts cmd (its Dir, Env and any SysProcAttr set by the caller) as a Service: the
// stdout and stderr that cmd does not set already are appended to logPath,
// after a line saying what starts when. With logPath "" they are
// discarded (a program such as the benchmark harness, which keeps no logs).
func Spawn(cmd *exec.Cmd, logPath string) (*Service, error) {
	var logf *os.File
	if logPath != "" {
		var err error
		if logf, err = os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return nil, fmt.Errorf("proctest: open log: %w", err)
		}
		fmt.Fprintf(logf, "==> proctest: starting %s at %s\n", filepath.Base(cmd.Path), time.Now().Format(time.RFC3339Nano))
		if cmd.Stdout == nil {
			cmd.Stdout = logf
		}
		if cmd.Stderr == nil {
			cmd.Stderr = logf
		}
	}
	// The caller's attributes (a Credential, say) are kept.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pdeathsig = true, syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		s := &Service{log: logf}
		s.closeLog()
		return nil, fmt.Errorf("proctest: exec %s: %w", cmd.Path, err)
	}
	s := &Service{cmd: cmd, log: logf, exited: make(chan struct{})}
	go func() { // ends when the process exits; Stop and Kill wait for it
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// Pid returns the process id (that of its process group too).
func (s *Service) Pid() int { return s.cmd.Process.Pid }

// Exited is closed once the process has exited.
func (s *Service) Exited() <-chan struct{} { return s.exited }

// Err is the process's exit error (nil for a clean exit), valid once
// Exited is closed.
func (s *Service) Err() error {
	<-s.exited
	return s.waitErr
}

// Signal sends sig to the process group.
func (s *Service) Signal(sig syscall.Signal) { _ = syscall.Kill(-s.Pid(), sig) }

// WaitReady calls ready every 50 ms until it returns nil, the process
// exits, or timeout passes; the error names the last answer. It does not
// stop the process.
func (s *Service) WaitReady(timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	last := errors.New("no answer yet")
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("%s exited before it was ready: %v", filepath.Base(s.cmd.Path), s.waitErr)
		default:
		}
		if last = ready(); last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %w", timeout, last)
		}
		time.Sleep(pollEvery)
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace, and
// waits for the process to exit.
func (s *Service) Stop(grace time.Duration) {
	s.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
		s.Signal(syscall.SIGKILL)
		<-s.exited
	}
	s.closeLog()
}

// Terminate sends SIGTERM to the process (not its group: a graceful stop
// of the process itself) and waits up to timeout for it to exit. It
// returns the process's exit error (nil for a clean exit), or an error if
// it still runs, which it is then left to do.
func (s *Service) Terminate(timeout time.Duration) error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.exited:
		return s.waitErr
	case <-t.C:
		return fmt.Errorf("proctest: %s did not stop within %v of SIGTERM", filepath.Base(s.cmd.Path), timeout)
	}
}

// Kill sends SIGKILL to the process group (it works on a stopped,
// SIGSTOPped one too) and waits for the process to exit.
func (s *Service) Kill() {
	s.Signal(syscall.SIGKILL)
	<-s.exited
	s.closeLog()
}

// closeLog closes the log file, if there is one.
func (s *Service) closeLog() {
	if s.log != nil {
		_ = s.log.Close()
	}
}

// Build compiles the main package pkg (an import path) into dir and returns
// the binary's path; race adds -race.
func Build(dir, pkg string, race bool) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg))
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("proctest: build %s: %w", pkg, err)
	}
	return bin, nil
}
