package proctest

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Runs is a service a test starts, stops and starts again with the same
// command line (the same ports, the same data), one run at a time: the
// life cycle of consultest's agent and s3test's server. Its methods are safe
// for concurrent use.
type Runs struct {
	// LogPath is the log file of every run.
	LogPath string
	// Grace is how long Stop waits after SIGTERM before SIGKILL.
	Grace time.Duration

	mu   sync.Mutex
	proc *Service // nil while stopped
}

// Start spawns cmd as the next run and waits, for at most timeout, until
// ready returns nil (see Service.WaitReady); on failure the run is killed.
func (r *Runs) Start(cmd *exec.Cmd, timeout time.Duration, ready func() error) error {
	p, err := Spawn(cmd, r.LogPath)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.proc = p
	r.mu.Unlock()
	if err := p.WaitReady(timeout, ready); err != nil {
		r.Kill()
		return err
	}
	return nil
}

// Running reports whether a run is going on.
func (r *Runs) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc != nil
}

// Pid returns the process id of the current run, 0 when stopped.
func (r *Runs) Pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return 0
	}
	return r.proc.Pid()
}

// Signal sends sig to the current run's process group and reports whether
// there was one.
func (r *Runs) Signal(sig syscall.Signal) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc != nil {
		r.proc.Signal(sig)
	}
	return r.proc != nil
}

// Pause stops the current run's process group and waits until all of it
// has stopped (Service.Pause). It fails without a run.
func (r *Runs) Pause(timeout time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return errors.New("proctest: pause: not running")
	}
	return r.proc.Pause(timeout)
}

// Stop stops the current run (SIGCONT in case it is paused, SIGTERM, then
// SIGKILL after Grace) and waits for it to exit. Without a run it does
// nothing.
func (r *Runs) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc != nil {
		r.proc.Signal(syscall.SIGCONT)
		r.proc.Stop(r.Grace)
		r.proc = nil
	}
}

// Kill SIGKILLs the current run (a paused one too) and waits for it to
// exit. Without a run it does nothing.
func (r *Runs) Kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc != nil {
		r.proc.Kill()
		r.proc = nil
	}
}
