//go:build !race

// The SIGKILL runs of node processes run in make test's second pass, at
// full speed: under -race the harness builds the nodes with the race
// detector too, and five exactly-once node processes beside every other
// -race package overload a 2-core machine.

package integration

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/consultest"
)

// killAndRestart SIGKILLs node id, waits until the other running nodes
// noticed, restarts it and waits until every node sees it again.
func (c *cluster) killAndRestart(id string, members int) (noticed time.Duration) {
	c.t.Helper()
	at := c.crash(id)
	c.waitFor(30*time.Second, id+"'s crash to be noticed", func() bool {
		for _, n := range c.running() {
			st, err := n.status()
			if err != nil {
				return false
			}
			for _, m := range st.Members {
				if m.ID == id {
					return false
				}
			}
		}
		return true
	})
	noticed = time.Since(at)
	c.start(id)
	c.waitFor(60*time.Second, id+" to rejoin", func() bool {
		for _, n := range c.running() {
			if st, err := n.status(); err != nil || len(st.Members) != members {
				return false
			}
		}
		return true
	})
	return noticed
}

// running returns the running nodes.
func (c *cluster) running() []*node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*node, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, n)
	}
	return out
}

// Exactly-once state through crashes: 3 nodes count a generated stream
// while random nodes are SIGKILLed at random moments and restarted; every
// crash rolls every node back to the newest checkpoint (in a directory
// every node shares) and the generator replays from there. In the end each
// key was counted exactly as often as it was generated: not once more, not
// once less, though whole seconds of work were lost and redone.
func TestExactlyOnceStateThroughSIGKILLs(t *testing.T) {
	const records, keys, kills = 240_000, 3000, 5
	agent := consultest.Start(t)
	store := t.TempDir()
	c := newCluster(t, agent.Addr(), "-records", fmt.Sprint(records), "-keys", fmt.Sprint(keys), "-rate", "2000",
		"-guarantee", "exactly-once", "-checkpoints", store, "-checkpoint-interval", "300ms")
	ids := []string{"n1", "n2", "n3"}
	for _, id := range ids {
		c.start(id)
	}
	c.waitFor(time.Minute, "some records counted", func() bool { return c.processed("count") >= 10_000 })
	c.killAtRandom(ids, kills, 2, 300*time.Millisecond, 1800*time.Millisecond)
	c.waitFor(3*time.Minute, "every record counted", func() bool { return c.processed("count") == records })
	// Stop the nodes one by one: each hands its state to the others, so
	// the last one holds every count.
	c.stop("n1")
	c.stop("n2")
	c.stop("n3")
	counts := readCounts(t, c.dir+"/n3/data")
	if len(counts) != keys {
		t.Fatalf("%d keys counted, want %d", len(counts), keys)
	}
	for k, n := range counts {
		if n != records/keys {
			t.Fatalf("key %s counted %d times, want %d", k, n, records/keys)
		}
	}
	t.Logf("%d records through %d SIGKILLs: every key counted exactly %d times", records, kills, records/keys)
}

// killAtRandom SIGKILLs kills random nodes of ids, each at a random moment
// between min and max after the previous restart (seeded, the seed
// logged, stream distinguishing the tests' sequences), and restarts each
// once the others noticed.
func (c *cluster) killAtRandom(ids []string, kills int, stream uint64, min, max time.Duration) {
	c.t.Helper()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, stream))
	c.t.Logf("seed %d", seed)
	for k := 1; k <= kills; k++ {
		time.Sleep(min + time.Duration(rng.Int64N(int64(max-min)))) // the random moment, not synchronisation
		victim := ids[rng.IntN(len(ids))]
		before := c.processed("count")
		noticed := c.killAndRestart(victim, len(ids))
		c.t.Logf("kill %d: %s at %d counted; noticed after %v", k, victim, before, noticed.Round(time.Millisecond))
	}
}
