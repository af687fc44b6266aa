//go:build !race

package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/sluicetest"
)

// A node whose disk fills up below its reserve (-min-free-disk 8 MiB on a
// 64 MiB tmpfs) turns unhealthy: /healthz answers 503 with the reason and
// its Consul check fails, and it takes no work (the other node's producers
// hold their records for it), keeping its instances. Once space is freed
// it goes on by itself. Exactly-once: every key counted exactly as often
// as generated.
func TestFullDiskNodePausesItsInstancesUntilSpaceReturns(t *testing.T) {
	const records, keys = 60_000, 600
	agent := consultest.Start(t)
	store := t.TempDir()
	disk := sluicetest.Tmpfs(t, 64<<20)
	c := newCluster(t, agent.Addr(), "-records", fmt.Sprint(records), "-keys", fmt.Sprint(keys), "-rate", "4000",
		"-guarantee", "exactly-once", "-checkpoints", store, "-checkpoint-interval", "300ms")
	c.nodeFlags = func(id string) []string {
		if id == "n2" {
			return []string{"-data", disk + "/data", "-min-free-disk", fmt.Sprint(8 << 20)}
		}
		return nil
	}
	c.start("n1")
	n2 := c.start("n2")
	running := func(n *node) int {
		st, err := n.status()
		count := 0
		if err == nil {
			for _, o := range st.Operators {
				for _, in := range o.Instances {
					if in.State == "running" {
						count++
					}
				}
			}
		}
		return count
	}
	c.waitFor(time.Minute, "n2 running instances and records counted", func() bool {
		return running(n2) > 0 && c.processed("count") >= 4_000
	})

	filler := sluicetest.FillDisk(t, disk, 4<<20)
	var body string
	c.waitFor(30*time.Second, "n2's /healthz to answer 503 with the reason", func() bool {
		_, err := httpGet("http://" + n2.http + "/healthz")
		if err != nil {
			body = err.Error()
		}
		return strings.Contains(body, "503 Service Unavailable: unhealthy: disk full: ")
	})
	// n1's instances go on until the producers' windows to n2 are full
	// (RemoteCredits batches in flight and BufferBatches buffered per
	// destination), which at this rate takes up to a few seconds; and the
	// rate-limited source pauses between polls. So "stopped" is no change
	// for a whole second, not between two samples.
	unhealthy := time.Now()
	paused, since := c.processed("count"), unhealthy
	c.waitFor(30*time.Second, "processing to stop (no record counted for 1 s)", func() bool {
		if p := c.processed("count"); p != paused {
			paused, since = p, time.Now()
		}
		return time.Since(since) >= time.Second && running(n2) > 0
	})
	if paused >= records {
		t.Fatalf("all %d records counted before the disk filled", records)
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		if p := c.processed("count"); p != paused {
			t.Fatalf("counted %d → %d while n2's disk was full", paused, p)
		}
		time.Sleep(100 * time.Millisecond) // sampling a condition that must hold
	}
	st, err := c.nodes["n1"].status()
	if err != nil || len(st.Members) != 2 {
		t.Fatalf("n1's members while n2 is unhealthy: %v (%v), want n2 still in", st.Members, err)
	}
	t.Logf("n2 unhealthy at %d of %d records, the last counted %v after /healthz said so: %s", paused, records,
		since.Sub(unhealthy).Round(time.Millisecond), strings.TrimSpace(body))
	if err, exited := n2.proc.Exited(0); exited {
		t.Fatalf("n2 exited (%v) on a full disk with room in reserve; it should wait\n%s", err, c.logTail("n2"))
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	c.waitFor(30*time.Second, "n2's /healthz to answer ok", func() bool {
		_, err := httpGet("http://" + n2.http + "/healthz")
		return err == nil
	})
	c.waitFor(3*time.Minute, "every record counted", func() bool { return c.processed("count") == records })
	c.stop("n2")
	c.stop("n1")
	counts := readCounts(t, c.dir+"/n1/data")
	if len(counts) != keys {
		t.Fatalf("%d keys counted, want %d", len(counts), keys)
	}
	for k, n := range counts {
		if n != records/keys {
			t.Fatalf("key %s counted %d times, want %d", k, n, records/keys)
		}
	}
}
