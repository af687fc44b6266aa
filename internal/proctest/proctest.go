// Package proctest runs the node processes of multi-process tests: each in
// its own process group (SIGKILLed with the test process too), its stderr
// appended to a log file, and ready once it prints "ready http=ADDR" on
// stdout (as internal/testnode and samples/kafka-wordcount do).
package proctest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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

	cmd  *exec.Cmd
	logs *os.File
	done chan error // holds Wait's result once it is known
}

// Start runs bin with args (stderr
// appended to logPath) and waits until it prints its ready line. On error
// the process is gone.
func Start(bin string, args []string, logPath string) (*Process, error) {
	logs, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("proctest: %w", err)
	}
	p := &Process{cmd: exec.Command(bin, args...), logs: logs, done: make(chan error, 1)}
	p.cmd.Stderr = logs
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		logs.Close()
		return nil, fmt.Errorf("proctest: %w", err)
	}
	if err := p.cmd.Start(); err != nil {
		logs.Close()
		return nil, fmt.Errorf("proctest: start %s: %w", bin, err)
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
	go func() { p.done <- p.cmd.Wait() }()
	select {
	case p.HTTP = <-ready:
		return p, nil
	case err := <-p.done:
		p.done <- err
		logs.Close()
		return nil, fmt.Errorf("%w: %v", ErrExited, err)
	case <-time.After(ReadyTimeout):
		p.Kill()
		return nil, fmt.Errorf("not ready after %v", ReadyTimeout)
	}
}

// Kill SIGKILLs the process group and waits (at most 10 s) for the
// process to be gone. It may be called more than once.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(10 * time.Second):
	}
	p.logs.Close()
}

// Stop sends SIGTERM (a graceful leave) and waits up to timeout for the
// process to exit; it returns the process's exit error, or an error if it
// is still running.
func (p *Process) Stop(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(timeout):
		return fmt.Errorf("did not stop within %v", timeout)
	}
}
