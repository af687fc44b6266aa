package sluicetest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// childEnv marks a test binary started by InChild.
const childEnv = "SLUICE_TEST_CHILD_DIR"

// ChildDir returns the directory InChild passed to this process, and
// whether this process is such a child.
func ChildDir() (string, bool) {
	d := os.Getenv(childEnv)
	return d, d != ""
}

// PebbleCrash is the fatal error Pebble v2 ends in when ENOSPC hits it
// while it rotates its WAL: its panic unwinds through a deferred Unlock of
// a mutex the panicking code had released, which the Go runtime turns into
// an unrecoverable fatal error. A process it happens in dies (non-zero).
const PebbleCrash = "fatal error: sync: unlock of unlocked mutex"

// InChild runs the calling test again in a child process (this test
// binary, -test.run of t's name) with dir passed to it (see ChildDir), and
// returns the child's combined output and exit error. It fails t if the
// child does not exit within timeout: for tests of paths that may end the
// process (a Pebble fatal error on a full disk), where "exits" is an
// acceptable outcome and "hangs" is not.
func InChild(t *testing.T, dir string, timeout time.Duration) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the child process did not exit within %v (a hang):\n%s", timeout, tail(string(out)))
	}
	return string(out), err
}

// ChildOutcome checks a child's result (InChild): it passed, or it died of
// PebbleCrash; any other failure fails t with the child's output.
func ChildOutcome(t *testing.T, out string, err error) {
	t.Helper()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && strings.Contains(out, PebbleCrash) && !strings.Contains(out, "--- FAIL"):
		t.Logf("the child process died of Pebble's fatal error on the full disk (it exits: the cluster restarts it elsewhere):\n%s", tail(out))
	default:
		t.Fatalf("child process: %v\n%s", err, tail(out))
	}
}

func tail(s string) string {
	if len(s) > 6000 {
		return s[len(s)-6000:]
	}
	return s
}
