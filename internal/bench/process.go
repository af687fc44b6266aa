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
	"time"

	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/internal/proctest"
)

// proc is a child process of a benchmark (a testnode), run by
// internal/proctest: in its own process group, SIGKILLed if the benchmark
// dies, its stderr discarded.
type proc struct {
	cmd   *exec.Cmd
	svc   *proctest.Service
	stdin io.WriteCloser
	lines chan string // stdout, line by line
}

// startProc runs bin with args and waits for a stdout line starting with
// "ready", which it returns.
func startProc(bin string, args []string, env []string) (*proc, string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", fmt.Errorf("bench: start %s: %w", bin, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", fmt.Errorf("bench: start %s: %w", bin, err)
	}
	svc, err := proctest.Spawn(cmd, "")
	if err != nil {
		return nil, "", fmt.Errorf("bench: start %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, svc: svc, stdin: in, lines: make(chan string, 16)}
	go func() { // ends at the end of stdout: when the process exits
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t := time.NewTimer(proctest.ReadyTimeout)
	defer t.Stop()
	select {
	case l, ok := <-p.lines:
		if ok && strings.HasPrefix(l, "ready") {
			return p, l, nil
		}
		p.kill()
		return nil, "", fmt.Errorf("bench: %s %v: unexpected first line %q", bin, args, l)
	case <-t.C:
		p.kill()
		return nil, "", fmt.Errorf("bench: %s %v: not ready after %v", bin, args, proctest.ReadyTimeout)
	}
}

// cpu returns the CPU time (user and system, all threads) the process
// has used so far: from /proc/<pid>/stat (clock ticks of 10 ms, Linux's
// USER_HZ) while it runs, from its wait status once it has exited (a
// process may end on its own, as the raw sink does after its count).
func (p *proc) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.svc.Pid()))
	if err == nil {
		return statCPU(string(b))
	}
	// Gone from /proc: reaped, or about to be.
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-p.svc.Exited(): // cmd.Wait has set ProcessState
		st := p.cmd.ProcessState
		return st.UserTime() + st.SystemTime(), nil
	case <-t.C:
		return 0, fmt.Errorf("bench: cpu of %d: %w", p.svc.Pid(), err)
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

// kill ends the process group and waits for the process to exit.
func (p *proc) kill() { p.svc.Kill() }

// finish closes p's stdin, which ends a process that reads it to its end
// (the raw sender), and waits for it to exit (killing it after timeout).
func (p *proc) finish(timeout time.Duration) {
	_ = p.stdin.Close()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.svc.Exited():
	case <-t.C:
		p.kill()
	}
}

// stop asks for a graceful stop (SIGTERM) and waits, killing the process
// group after timeout.
func (p *proc) stop(timeout time.Duration) { p.svc.Stop(timeout) }

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
