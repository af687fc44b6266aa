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
			state, _, ok := parseStat(st)
			if ok && state != 'T' && state != 't' && state != 'Z' && state != 'X' {
				return fmt.Sprintf("%d/%s (state %c)", pid, t.Name(), state), nil
			}
		}
	}
	return "", nil
}

// ProcessGroups maps the process group IDs of the processes running now to
// the processes in them (from /proc).
func ProcessGroups() map[int][]int {
	out := map[int][]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
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
		if _, pgrp, ok := parseStat(b); ok {
			out[pgrp] = append(out[pgrp], pid)
		}
	}
	return out
}

// parseStat returns the state and process group of a /proc stat line:
// "pid (comm) state ppid pgrp ...", where comm may hold spaces and ")".
func parseStat(b []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pg, true
}
