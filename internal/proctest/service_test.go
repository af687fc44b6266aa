package proctest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
)

// Spawn with no log path runs the process with its output discarded.
func TestSpawnWithoutLog(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", "echo out; echo err >&2")
	cmd.Dir = dir
	svc, err := Spawn(cmd, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Kill)
	if err := svc.Err(); err != nil {
		t.Fatalf("exit: got %v, want nil", err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Fatalf("files in the working directory: got %v (%v), want none", entries, err)
	}
}

// Terminate signals the process, not its group, and reports how it ended.
func TestTerminate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string // runs a child sleep once its trap is set
		timeout time.Duration
		check   func(t *testing.T, err error)
	}{
		{"clean exit on SIGTERM", `trap "exit 0" TERM; sleep 300 & wait`, 30 * time.Second, func(t *testing.T, err error) {
			if err != nil {
				t.Fatalf("got %v, want nil", err)
			}
		}},
		{"killed by SIGTERM", `sleep 300 & wait`, 30 * time.Second, func(t *testing.T, err error) {
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("got %v, want an *exec.ExitError", err)
			}
		}},
		{"SIGTERM ignored", `trap "" TERM; sleep 300 & wait`, 100 * time.Millisecond, func(t *testing.T, err error) {
			if err == nil || !strings.Contains(err.Error(), "did not stop within 100ms") {
				t.Fatalf("got %v, want did not stop within 100ms", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := Spawn(exec.Command("sh", "-c", tc.script), filepath.Join(t.TempDir(), "log"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(svc.Kill)
			pgid := svc.Pid()
			sluicetest.WaitFor(t, 30*time.Second, "the shell and its child in the group", func() bool { return len(ProcessGroups()[pgid]) == 2 })
			tc.check(t, svc.Terminate(tc.timeout))
			if n := len(ProcessGroups()[pgid]); n < 1 {
				t.Fatalf("processes left in the group: got %d, want the child sleep (only the shell was signalled)", n)
			}
		})
	}
}
