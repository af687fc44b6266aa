package mesostest

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// sandboxDir returns a fresh sandbox path for t, laid out like an agent's
// work directory.
func (m *Master) sandboxDir(t *task, run int) string {
	return filepath.Join(m.rootDir, "agents", url.PathEscape(t.agentID),
		"frameworks", url.PathEscape(t.fwID),
		"executors", url.PathEscape(t.executorID),
		"runs", strconv.Itoa(run))
}

// runTask is the simulated agent and command executor of one task: it
// prepares the sandbox (fetching URIs), starts the process, reports
// TASK_STARTING and TASK_RUNNING, handles kill requests, and reports the
// terminal state when the process exits.
func (m *Master) runTask(t *task) {
	defer m.wg.Done()
	// t.sandbox, t.info and t.res are immutable after launch.
	prepErr := prepareSandbox(t.sandbox, t.info.Command)
	if prepErr == nil {
		prepErr = m.mountVolumes(t)
	}

	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return
	case t.lost:
		m.unlock()
		return
	case t.orphaned:
		m.setTerminalLocked(t, mesos.TASK_KILLED)
		delete(m.tasks, t.key())
		m.unlock()
		return
	case t.killRequested:
		m.agentUpdateLocked(t, mesos.TASK_KILLED, mesos.SOURCE_AGENT,
			mesos.REASON_TASK_KILLED_DURING_LAUNCH.Enum(), "Task killed before delivery to the executor")
		m.unlock()
		return
	case prepErr != nil:
		m.launchFailedLocked(t, prepErr)
		m.unlock()
		return
	}
	cmd, err := m.command(t)
	if err == nil {
		err = startCommand(cmd, t.sandbox)
	}
	if err != nil {
		m.launchFailedLocked(t, err)
		m.unlock()
		return
	}
	t.pid = cmd.Process.Pid
	t.running = true
	m.procs++
	m.agentUpdateLocked(t, mesos.TASK_STARTING, mesos.SOURCE_EXECUTOR, nil, "")
	m.agentUpdateLocked(t, mesos.TASK_RUNNING, mesos.SOURCE_EXECUTOR, nil, "")
	waitCh := make(chan error, 1)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		waitCh <- cmd.Wait()
	}()
	m.unlock()

	waitErr := m.supervise(t, waitCh)

	m.mu.Lock()
	defer m.unlock()
	t.running = false
	m.procs--
	ok, desc := describeExit(waitErr)
	t.exitStatus = desc
	switch {
	case m.closed, t.lost:
		// Nothing more is reported.
	case t.orphaned:
		m.setTerminalLocked(t, mesos.TASK_KILLED)
		delete(m.tasks, t.key())
	case t.limitation != "":
		m.agentUpdateLocked(t, mesos.TASK_FAILED, mesos.SOURCE_AGENT, mesos.REASON_CONTAINER_LIMITATION.Enum(), t.limitation)
	case t.killRequested:
		m.agentUpdateLocked(t, mesos.TASK_KILLED, mesos.SOURCE_EXECUTOR, nil, desc)
	case ok:
		m.agentUpdateLocked(t, mesos.TASK_FINISHED, mesos.SOURCE_EXECUTOR, nil, desc)
	default:
		m.agentUpdateLocked(t, mesos.TASK_FAILED, mesos.SOURCE_EXECUTOR, nil, desc)
		// The default executor kills the rest of a task group when one
		// of its tasks fails.
		if g := t.group; g != nil {
			for _, gt := range g.tasks {
				if gt != t {
					m.killTaskLocked(gt, m.cfg.KillGracePeriod)
				}
			}
		}
	}
}

func (m *Master) launchFailedLocked(t *task, err error) {
	m.logf("mesostest: task %s failed to launch: %v", t.id, err)
	m.agentUpdateLocked(t, mesos.TASK_FAILED, mesos.SOURCE_AGENT,
		mesos.REASON_CONTAINER_LAUNCH_FAILED.Enum(), "Failed to launch container: "+err.Error())
}

// supervise waits for the process to exit, delivering kill requests to
// its process group: SIGTERM then SIGKILL after the grace period for
// framework kills, SIGKILL at once for forced kills and on Close.
func (m *Master) supervise(t *task, waitCh <-chan error) error {
	pgid := t.pid
	var (
		timer    *time.Timer
		escalate <-chan time.Time
		termSent bool
		done     = m.done
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		// Like a container teardown: nothing of the task may outlive it.
		signalGroup(pgid, syscall.SIGKILL)
	}()
	for {
		select {
		case err := <-waitCh:
			return err
		case <-t.wake:
			m.mu.Lock()
			killNow, term, grace := t.killNow, t.termRequested, t.grace
			m.mu.Unlock()
			switch {
			case killNow:
				signalGroup(pgid, syscall.SIGKILL)
			case term && !termSent:
				termSent = true
				signalGroup(pgid, syscall.SIGTERM)
				timer = time.NewTimer(grace)
				escalate = timer.C
			}
		case <-escalate:
			escalate = nil
			signalGroup(pgid, syscall.SIGKILL)
		case <-done:
			done = nil
			signalGroup(pgid, syscall.SIGKILL)
		}
	}
}

func signalGroup(pgid int, sig syscall.Signal) {
	if pgid <= 0 {
		return
	}
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(pgid, sig)
	}
}

// describeExit renders the process result like the Mesos command executor
// ("Command exited with status N", "Command terminated with signal X").
func describeExit(err error) (bool, string) {
	if err == nil {
		return true, "Command exited with status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			name := ws.Signal().String()
			if name != "" {
				name = strings.ToUpper(name[:1]) + name[1:]
			}
			return false, "Command terminated with signal " + name
		}
		return false, fmt.Sprintf("Command exited with status %d", ee.ExitCode())
	}
	return false, "Failed to wait for command: " + err.Error()
}

// command builds the process for t's CommandInfo: shell=true (the
// default) runs "/bin/sh -c value"; shell=false executes value with
// arguments as argv. The environment is the test process' environment
// (an agent passes its own environment to executors), the MESOS_* task
// variables, then CommandInfo.environment.
func (m *Master) command(t *task) (*exec.Cmd, error) {
	ci := t.info.Command
	var cmd *exec.Cmd
	if ci.GetShell() {
		cmd = exec.Command("/bin/sh", "-c", ci.GetValue())
	} else {
		path := ci.GetValue()
		if !strings.Contains(path, "/") {
			lp, err := exec.LookPath(path)
			if err != nil {
				return nil, fmt.Errorf("failed to find executable %q: %w", path, err)
			}
			path = lp
		}
		args := ci.Arguments
		if len(args) == 0 {
			args = []string{ci.GetValue()}
		}
		cmd = &exec.Cmd{Path: path, Args: append([]string(nil), args...)}
	}
	env := append(os.Environ(),
		"PWD="+t.sandbox,
		"MESOS_SANDBOX="+t.sandbox,
		"MESOS_DIRECTORY="+t.sandbox,
		"MESOS_TASK_ID="+t.id,
		"MESOS_AGENT_ID="+t.agentID,
		"MESOS_SLAVE_ID="+t.agentID,
		"MESOS_FRAMEWORK_ID="+t.fwID,
		"MESOS_EXECUTOR_ID="+t.executorID,
	)
	for _, v := range ci.GetEnvironment().GetVariables() {
		if v.GetType() == mesos.Environment_Variable_SECRET {
			return nil, fmt.Errorf("environment variable %q: secrets are not supported by mesostest", v.Name)
		}
		env = append(env, v.Name+"="+v.GetValue())
	}
	cmd.Env = env
	cmd.Dir = t.sandbox
	cmd.SysProcAttr = sysProcAttr()
	return cmd, nil
}

// forkMu keeps processes from being forked while an executable is being
// written: a child forked then inherits the file open for writing until it
// execs, and exec of that file fails with ETXTBSY ("text file busy",
// golang.org/issue/22315). Fetching a URI holds it exclusively, starting a
// command shared.
var forkMu sync.RWMutex

// startCommand starts cmd with stdout and stderr redirected to the files
// "stdout" and "stderr" of the sandbox.
func startCommand(cmd *exec.Cmd, sandbox string) error {
	stdout, err := os.OpenFile(filepath.Join(sandbox, "stdout"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening stdout: %w", err)
	}
	defer stdout.Close()
	stderr, err := os.OpenFile(filepath.Join(sandbox, "stderr"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening stderr: %w", err)
	}
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	forkMu.RLock()
	err = cmd.Start()
	forkMu.RUnlock()
	if err != nil {
		return fmt.Errorf("failed to launch command: %w", err)
	}
	return nil
}

// mountVolumes makes t's persistent volumes appear in its sandbox at their
// container paths (the agent bind-mounts them; a symbolic link does here).
func (m *Master) mountVolumes(t *task) error {
	for _, k := range t.res.kinds() {
		if k.volume == "" {
			continue
		}
		link := filepath.Join(t.sandbox, filepath.FromSlash(k.path))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return fmt.Errorf("mounting volume %s: %w", k.volume, err)
		}
		if err := os.Symlink(m.volumeDir(t.agentID, k.role, k.volume), link); err != nil {
			return fmt.Errorf("mounting volume %s at %s: %w", k.volume, k.path, err)
		}
	}
	return nil
}

// prepareSandbox creates the sandbox and fetches the command's URIs into
// it.
func prepareSandbox(dir string, ci *mesos.CommandInfo) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating sandbox: %w", err)
	}
	for _, u := range ci.GetURIs() {
		if err := fetchURI(dir, u); err != nil {
			return fmt.Errorf("failed to fetch all URIs for container: %w", err)
		}
	}
	return nil
}

// fetchURI copies a "file://" or absolute-path URI into the sandbox, named
// after its base name or output_file, and makes it executable if asked.
// Other schemes are not supported; "extract" and "cache" are ignored (an
// archive is copied as is).
func fetchURI(sandbox string, u mesos.CommandInfo_URI) error {
	src := u.Value
	if strings.Contains(src, "://") {
		parsed, err := url.Parse(src)
		if err != nil {
			return fmt.Errorf("parsing URI %q: %w", src, err)
		}
		if parsed.Scheme != "file" || (parsed.Host != "" && parsed.Host != "localhost") {
			return fmt.Errorf("URI %q: only file:// URIs and absolute paths are supported by mesostest", src)
		}
		src = parsed.Path
	}
	if !filepath.IsAbs(src) {
		return fmt.Errorf("URI %q: not an absolute path", u.Value)
	}
	name := filepath.Base(src)
	if of := u.GetOutputFile(); of != "" {
		name = of
	}
	if filepath.IsAbs(name) || !filepath.IsLocal(name) {
		return fmt.Errorf("URI %q: output file %q must be a relative path inside the sandbox", u.Value, name)
	}
	dst := filepath.Join(sandbox, name)
	forkMu.Lock()
	defer forkMu.Unlock()
	if err := copyFile(src, dst); err != nil {
		return fmt.Errorf("fetching %q: %w", u.Value, err)
	}
	if u.GetExecutable() {
		if err := os.Chmod(dst, 0o755); err != nil {
			return fmt.Errorf("fetching %q: %w", u.Value, err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
