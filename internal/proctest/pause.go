package proctest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Pause stops the process group (SIGSTOP) and waits, for at most timeout,
// until every thread of every process in it has stopped. kill(2) returns
// once the signal is queued: one thread of a process takes it and then
// stops the others, so on a loaded machine the rest can run, and answer a
// request, for milliseconds after Signal(SIGSTOP) returned.
func (s *Service) Pause(timeout time.Duration) error {
	s.Signal(syscall.SIGSTOP)
	deadline := time.Now().Add(timeout)
	for {
		running, err := groupRunning(s.Pid())
		if err != nil {
			return fmt.Errorf("proctest: pause: %w", err)
		}
		if running == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("proctest: pause: %s still not stopped after %v", running, timeout)
		}
		time.Sleep(time.Millisecond) // polling /proc: there is nothing to wait on
	}
}

// groupRunning returns a thread of process group pgid that has not stopped
// ("pid/tid"), or "" when all have.
func groupRunning(pgid int) (string, error) {
	pids := ProcessGroups()[pgid]
	if len(pids) == 0 {
		return "", fmt.Errorf("no process in group %d", pgid)
	}
	for _, pid := range pids {
		dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
		tasks, err := os.ReadDir(dir)
		if err != nil {
			continue // gone meanwhile
		}
		for _, t := range tasks {
			st, err := os.ReadFile(filepath.Join(dir, t.Name(), "stat"))
			if err != nil {
				continue // exited thread
			}
			s, ok := parseStat(st)
			if ok && s.state != 'T' && s.state != 't' && s.state != 'Z' && s.state != 'X' {
				return fmt.Sprintf("%d/%s (state %c)", pid, t.Name(), s.state), nil
			}
		}
	}
	return "", nil
}

// ProcessGroups maps the process group IDs of the processes running now to
// the processes in them (from /proc).
func ProcessGroups() map[int][]int {
	out := map[int][]int{}
	eachProcess(func(pid int, st stat) { out[st.pgrp] = append(out[st.pgrp], pid) })
	return out
}

// Children lists the processes running now whose parent is pid (from
// /proc): the processes of a service that left its process group, such as
// PostgreSQL's backends, each a session leader of its own.
func Children(pid int) []int {
	if pid <= 0 {
		return nil // no process: not the kernel's children of pid 0
	}
	var out []int
	eachProcess(func(c int, st stat) {
		if st.ppid == pid {
			out = append(out, c)
		}
	})
	return out
}

// eachProcess calls fn with each process in /proc and its stat line.
func eachProcess(fn func(pid int, st stat)) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		if st, ok := parseStat(b); ok {
			fn(pid, st)
		}
	}
}

// stat is what this package reads of a /proc stat line.
type stat struct {
	state      byte
	ppid, pgrp int
}

// parseStat parses a /proc stat line: "pid (comm) state ppid pgrp ...",
// where comm may hold spaces and ")".
func parseStat(b []byte) (stat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return stat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pg, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return stat{}, false
	}
	return stat{state: f[0][0], ppid: ppid, pgrp: pg}, true
}
