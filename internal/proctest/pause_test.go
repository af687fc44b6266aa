package proctest

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
)

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		line  string
		state byte
		ppid  int
		pgrp  int
		ok    bool
	}{
		{"123 (weed) S 1 123 123 0 -1", 'S', 1, 123, true},
		{"7 (a) b (c)) T 5 99 99 0", 'T', 5, 99, true},
		{"7 (truncated", 0, 0, 0, false},
		{"7 (x) TT 1 2", 0, 0, 0, false},
	} {
		st, ok := parseStat([]byte(c.line))
		if st.state != c.state || st.ppid != c.ppid || st.pgrp != c.pgrp || ok != c.ok {
			t.Errorf("parseStat(%q) = %+v, %t; want %q, ppid %d, pgrp %d, %t", c.line, st, ok, c.state, c.ppid, c.pgrp, c.ok)
		}
	}
}

// Pause returns only once every process of the group is stopped: a shell
// and its child here.
func TestPauseStopsTheWholeGroup(t *testing.T) {
	svc, err := Spawn(exec.Command("sh", "-c", "sleep 300 & wait"), filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Kill)
	sluicetest.WaitFor(t, 30*time.Second, "the shell and its child in the group", func() bool { return len(ProcessGroups()[svc.Pid()]) == 2 })
	if err := svc.Pause(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if running, err := groupRunning(svc.Pid()); err != nil || running != "" {
		t.Fatalf("after Pause: running %q, %v", running, err)
	}
	svc.Signal(syscall.SIGCONT)
	sluicetest.WaitFor(t, 30*time.Second, "a thread running again after SIGCONT", func() bool {
		running, err := groupRunning(svc.Pid())
		return err == nil && running != ""
	})
}
