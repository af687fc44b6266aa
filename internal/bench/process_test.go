package bench

import (
	"os/exec"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/proctest"
)

func TestStatCPU(t *testing.T) {
	// utime 250 and stime 17 ticks; the command holds a space and a ')'.
	line := "4242 (a b) c) S 1 4242 4242 0 -1 4194560 3000 0 0 0 250 17 0 0 20 0 9 0 1234 5678 90 18446744073709551615"
	got, err := statCPU(line)
	if err != nil || got != 2670*time.Millisecond {
		t.Fatalf("statCPU = %v, %v; want 2.67s", got, err)
	}
	for _, bad := range []string{"", "4242 no parenthesis", "4242 (x) S 1 2", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 u s"} {
		if _, err := statCPU(bad); err == nil {
			t.Errorf("statCPU(%q): no error", bad)
		}
	}
}

// A busy child's CPU time, read from /proc, grows.
func TestProcCPU(t *testing.T) {
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	svc, err := proctest.Spawn(cmd, "") // as startProc
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, svc: svc}
	t.Cleanup(p.kill)
	deadline := time.Now().Add(30 * time.Second)
	var c time.Duration
	for c < 50*time.Millisecond {
		var err error
		if c, err = p.cpu(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("a busy loop used %v of CPU in 30 s", c)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Once it has exited (as the raw sink does on its own), its CPU time
	// comes from its wait status: no less than what /proc said.
	p.kill()
	after, err := p.cpu()
	if err != nil || after < c {
		t.Fatalf("CPU after exit: %v, %v; want ≥ %v", after, err, c)
	}
}
