package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/control"
)

// proc is a child process of a benchmark (a testnode).
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string   // stdout, line by line
	exited chan struct{} // closed once the process has exited and been waited for
}

// watch starts p's waiter: cmd must have been started.
func (p *proc) watch() {
	p.exited = make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
}

// startProc runs bin with args and waits for a stdout line starting with
// "ready", which it returns.
func startProc(bin string, args []string, env []string) (*proc, string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = io.Discard
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("bench: start %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, stdin: in, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	p.watch()
	select {
	case l, ok := <-p.lines:
		if ok && strings.HasPrefix(l, "ready") {
			return p, l, nil
		}
		p.kill()
		return nil, "", fmt.Errorf("bench: %s %v: unexpected first line %q", bin, args, l)
	case <-time.After(60 * time.Second):
		p.kill()
		return nil, "", fmt.Errorf("bench: %s %v: not ready after 60s", bin, args)
	}
}

// cpu returns the CPU time (user and system, all threads) the process
// has used so far: from /proc/<pid>/stat (clock ticks of 10 ms, Linux's
// USER_HZ) while it runs, from its wait status once it has exited (a
// process may end on its own, as the raw sink does after its count).
func (p *proc) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err == nil {
		return statCPU(string(b))
	}
	// Gone from /proc: reaped, or about to be.
	select {
	case <-p.exited:
		st := p.cmd.ProcessState
		return st.UserTime() + st.SystemTime(), nil
	case <-time.After(10 * time.Second):
		return 0, fmt.Errorf("bench: cpu of %d: %w", p.cmd.Process.Pid, err)
	}
}

// statCPU parses utime + stime out of a /proc/<pid>/stat line.
func statCPU(stat string) (time.Duration, error) {
	// The command in parentheses may hold spaces: fields are counted
	// after its closing parenthesis, which starts field 3 (state).
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: /proc stat line %q: no command", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: /proc stat line %q: too short", stat)
	}
	var ticks int64
	for _, s := range f[11:13] { // fields 14 (utime) and 15 (stime)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: /proc stat line %q: %w", stat, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// kill ends the process group and waits.
func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
	}
}

// finish closes p's stdin, which ends a process that reads it to its end
// (the raw sender), and waits for it to exit (killing it after timeout).
func (p *proc) finish(timeout time.Duration) {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.kill()
	}
}

// stop asks for a graceful stop and waits (killing after timeout).
func (p *proc) stop(timeout time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.kill()
	}
}

// nodeStatus fetches a node's /v1/status.
func nodeStatus(httpAddr string) (control.Status, error) {
	var st control.Status
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/v1/node", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// fetch GETs path from a node's control API.
func fetch(httpAddr, path string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return string(b), err
}

// processed sums op's running instances' processed counts on one node.
func processed(st control.Status, op string) int64 {
	var n int64
	for _, o := range st.Operators {
		if o.Name == op {
			for _, in := range o.Instances {
				if in.State == "running" {
					n += in.Processed
				}
			}
		}
	}
	return n
}
