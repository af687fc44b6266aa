package integration

import (
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/persistence"
)

// readCounts opens a stopped node's database and returns every count.
func readCounts(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	db, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]int64{}
	err = db.NewStore("count").Scan(0, 256, nil, func(_ int, k, v []byte) error {
		n, err := testkinds.DecodeCount(v)
		out[string(k)] = n
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestThreeNodesJoinAndLeaveKeepCountsExact(t *testing.T) {
	const records, keys = 1_000_000, 10_000
	agent := consultest.Start(t)
	c := newCluster(t, agent.Addr(), "-records", fmt.Sprint(records), "-keys", fmt.Sprint(keys),
		"-rate", "40000", "-gen-parallelism", "3", "-count-parallelism", "12")
	for _, id := range []string{"n1", "n2", "n3"} {
		c.start(id)
	}
	c.waitFor(2*time.Minute, "a third of the records counted", func() bool { return c.processed("count") >= records/3 })
	c.start("n4")
	c.waitFor(2*time.Minute, "two thirds counted", func() bool { return c.processed("count") >= 2*records/3 })
	c.stop("n2")
	c.waitFor(3*time.Minute, "every record counted", func() bool { return c.processed("count") >= records })
	if got := c.processed("count"); got != records {
		// Not fatal: the stored counts below tell records counted twice
		// from a count reported twice.
		t.Errorf("processed %d records, want exactly %d; per instance (node/epoch.index): %v", got, records, c.instanceProgress("count"))
	}
	// Stop the others one by one: each hands its state on, so the last
	// node ends up with all of it.
	c.stop("n1")
	c.stop("n3")
	c.stop("n4")
	counts := readCounts(t, c.dir+"/n4/data")
	if len(counts) != keys {
		t.Fatalf("%d keys in the last node's state, want %d", len(counts), keys)
	}
	var wrong []string
	for k, n := range counts {
		if n != records/keys {
			wrong = append(wrong, fmt.Sprintf("%s=%d", k, n))
		}
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		t.Fatalf("%d keys not counted %d times: %v", len(wrong), records/keys, wrong[:min(len(wrong), 20)])
	}
	moves := 0
	for _, e := range c.events() {
		if e.What == "released" {
			moves++
		}
	}
	t.Logf("%d instance moves; all %d keys counted exactly %d times", moves, keys, records/keys)
	checkNoDoubleActivity(t, c.events(), nil)
}

func TestBadConsulAddressFailsFast(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	start := time.Now()
	out, err := exec.Command(nodeBinary, "-id", "x", "-data", t.TempDir(), "-consul", addr, "-node-insecure").CombinedOutput()
	elapsed := time.Since(start)
	if err == nil {
		t.Fatalf("node started with no Consul at %s", addr)
	}
	if !strings.Contains(string(out), addr) {
		t.Fatalf("error does not name the Consul address %s:\n%s", addr, out)
	}
	if elapsed > 10*time.Second {
		t.Fatalf("took %v to fail, want a fast failure", elapsed)
	}
	t.Logf("failed in %v: %s", elapsed.Round(time.Millisecond), strings.TrimSpace(string(out)))
}
