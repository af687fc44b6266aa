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
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/control"
)

// proc is a child process of a benchmark (a testnode).
type proc struct {
	cmd   *exec.Cmd
	lines chan string // stdout, line by line
	done  chan error
}

// startProc runs bin with args and waits for a stdout line starting with
// "ready", which it returns.
func startProc(bin string, args []string, env []string) (*proc, string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = io.Discard
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("bench: start %s: %w", bin, err)
	}
	p := &proc{cmd: cmd, lines: make(chan string, 16), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	go func() { p.done <- cmd.Wait() }()
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

// kill ends the process group and waits.
func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// stop asks for a graceful stop and waits (killing after timeout).
func (p *proc) stop(timeout time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
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
