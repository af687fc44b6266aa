package mesostest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/proctest"
)

// The network/ports isolator with --enforce_container_ports
// (docs/isolators/network-ports.md, NetworkPortsIsolatorProcess::check):
// every PortsWatchInterval the listening TCP sockets of every task's
// processes are compared with the task's "ports" resources, and a task
// listening on a port not allocated to it is killed. Its terminal update
// is TASK_FAILED with REASON_CONTAINER_LIMITATION and the message
// "Container ... is listening on unallocated port(s): [...]".
//
// A task's processes are its process group (every task runs in its own);
// their sockets are found through /proc/<pid>/fd and matched with the
// listening sockets of /proc/net/tcp and /proc/net/tcp6. This only works
// on Linux; elsewhere nothing is checked.

// portsIsolator runs the checks until Close.
func (m *Master) portsIsolator() {
	defer m.wg.Done()
	ticker := time.NewTicker(m.cfg.PortsWatchInterval)
	defer ticker.Stop()
	for {
		select {
		case <-m.done:
			return
		case <-ticker.C:
			m.checkPorts()
		}
	}
}

type watchedTask struct {
	t       *task
	pgid    int
	allowed rangeSet
}

func (m *Master) checkPorts() {
	m.mu.Lock()
	var watched []watchedTask
	for _, t := range m.allTasks {
		if t.running && t.limitation == "" && !t.killNow {
			var allowed rangeSet
			for k, s := range t.res.ranges {
				if k.name == "ports" {
					allowed = allowed.union(s)
				}
			}
			watched = append(watched, watchedTask{t: t, pgid: t.pid, allowed: allowed})
		}
	}
	m.mu.Unlock()
	if len(watched) == 0 {
		return
	}
	listening, err := listeningPorts()
	if err != nil {
		m.logf("mesostest: ports isolator: %v", err)
		return
	}
	groups := proctest.ProcessGroups()
	for _, w := range watched {
		var used rangeSet
		for _, pid := range groups[w.pgid] {
			for _, inode := range socketInodes(pid) {
				if p, ok := listening[inode]; ok {
					used = used.union(rangeSet{{p, p}})
				}
			}
		}
		bad := used.minus(w.allowed)
		if len(bad) == 0 {
			continue
		}
		msg := fmt.Sprintf("Container %s is listening on unallocated port(s): %s", w.t.executorID, bad)
		m.mu.Lock()
		if w.t.running && w.t.limitation == "" {
			w.t.limitation = msg
			m.forceKillLocked(w.t, msg)
			m.bumpLocked()
		}
		m.mu.Unlock()
	}
}

// listeningPorts maps the socket inodes of listening TCP sockets to their
// local ports.
func listeningPorts() (map[uint64]uint64, error) {
	out := map[uint64]uint64{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		sc := bufio.NewScanner(file)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if len(fields) < 10 || fields[3] != "0A" { // TCP_LISTEN
				continue
			}
			_, portHex, ok := strings.Cut(fields[1], ":")
			if !ok {
				continue
			}
			port, err1 := strconv.ParseUint(portHex, 16, 16)
			inode, err2 := strconv.ParseUint(fields[9], 10, 64)
			if err1 == nil && err2 == nil && inode != 0 {
				out[inode] = port
			}
		}
		err = sc.Err()
		file.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// socketInodes returns the inodes of the sockets process pid has open.
func socketInodes(pid int) []uint64 {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []uint64
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if v, ok := strings.CutPrefix(target, "socket:["); ok {
			if inode, err := strconv.ParseUint(strings.TrimSuffix(v, "]"), 10, 64); err == nil {
				out = append(out, inode)
			}
		}
	}
	return out
}
