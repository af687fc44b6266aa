//go:build !race

// The SIGKILL runs of node processes run in make test's second pass, at
// full speed: under -race the harness builds the nodes with the race
// detector too, and five exactly-once node processes beside every other
// -race package overload a 2-core machine.

package integration

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/testkinds"
)

// startCounting starts 3 nodes (n1, n2, n3, returned as ids) counting
// records generated over keys at 2000/s, exactly-once with checkpoints
// every 300 ms in a directory they share, and waits until 10,000 are
// counted. nodeFlags, if not nil, adds flags of one node.
func startCounting(t *testing.T, records, keys int, nodeFlags func(id string) []string) (c *cluster, ids []string) {
	agent := consultest.Start(t)
	store := t.TempDir()
	c = newCluster(t, agent.Addr(), "-records", fmt.Sprint(records), "-keys", fmt.Sprint(keys), "-rate", "2000",
		"-guarantee", "exactly-once", "-checkpoints", store, "-checkpoint-interval", "300ms")
	c.nodeFlags = nodeFlags
	ids = []string{"n1", "n2", "n3"}
	for _, id := range ids {
		c.start(id)
	}
	c.waitFor(time.Minute, "some records counted", func() bool { return c.processed("count") >= 10_000 })
	return c, ids
}

// killAndRestart SIGKILLs node id, waits until the other running nodes
// noticed, restarts it and waits until every node sees it again.
func (c *cluster) killAndRestart(id string, members int) (noticed time.Duration) {
	c.t.Helper()
	at := c.crash(id)
	c.waitFor(30*time.Second, id+"'s crash to be noticed", func() bool { return c.noneSees(id) })
	noticed = time.Since(at)
	c.start(id)
	c.waitFor(60*time.Second, id+" to rejoin", func() bool { return c.allSee(members) })
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
	c, ids := startCounting(t, records, keys, nil)
	c.killAtRandom(ids, kills, 2, 300*time.Millisecond, 1800*time.Millisecond)
	c.countAllThenCheck(records, keys)
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

// Exactly-once state through pauses: a node frozen (SIGSTOP: a long GC
// pause, a suspended VM) past its membership TTL is dropped, and the others
// roll back to the newest checkpoint and take over its key groups. When it
// resumes (SIGCONT) it still runs those instances on abandoned state: its
// heartbeat finds the membership lapsed, so it fences itself before the
// others could see it again, and exits (its batches are dropped by their
// receivers meanwhile, an older generation); restarted as a supervisor
// would, it joins afresh. In the end each key was counted exactly as often
// as it was generated.
func TestExactlyOnceStateThroughPausedNodes(t *testing.T) {
	const records, keys = 120_000, 3000
	c, ids := startCounting(t, records, keys, nil)
	for k, victim := range []string{"n2", "n3"} {
		n := c.nodes[victim]
		n.proc.Signal(syscall.SIGSTOP)
		c.mu.Lock()
		delete(c.nodes, victim) // its status cannot answer while it is paused
		c.mu.Unlock()
		c.waitFor(30*time.Second, victim+"'s pause to be noticed", func() bool { return c.noneSees(victim) })
		dropped := time.Now()
		// The others go on without it, past a checkpoint or two.
		before := c.processed("count")
		c.waitFor(30*time.Second, "progress without "+victim, func() bool { return c.processed("count") >= before+2000 })
		n.proc.Signal(syscall.SIGCONT)
		err, exited := n.proc.Exited(30 * time.Second)
		if !exited {
			c.dumpLogs()
			t.Fatalf("%s resumed after the others went on without it and did not fence itself within 30 s", victim)
		}
		if log := c.logTail(victim); !strings.Contains(log, "node fenced") {
			t.Fatalf("%s exited (%v) without saying it was fenced:\n%s", victim, err, log)
		}
		// It fenced itself before refreshing its membership: the others
		// never saw the stale member come back.
		for _, e := range c.events() {
			if e.What == "member-joined" && e.Peer == victim && e.Time.After(dropped) {
				t.Fatalf("%s saw the paused %s join again at %v before it was restarted", e.Node, victim, e.Time)
			}
		}
		// Restarted once the others noticed, as after a crash (see
		// killAndRestart).
		c.waitFor(30*time.Second, victim+"'s exit to be noticed", func() bool { return c.noneSees(victim) })
		c.start(victim)
		restarted := time.Now()
		c.waitFor(60*time.Second, victim+" to be a member again", func() bool { return c.allSee(len(ids)) })
		// The next pause comes once the restarted node holds its
		// instances: a crash while a joining node's state is still being
		// handed over can count records twice (found with this test, left
		// for its own fix; see the closing note of issue 11).
		c.waitFor(60*time.Second, "the handoffs to "+victim+" and a checkpoint after them", func() bool { return c.settled(restarted) })
		t.Logf("pause %d: %s paused until the others counted %d without it, fenced itself on resuming (%v), restarted", k+1, victim, before+2000, err)
	}
	c.countAllThenCheck(records, keys)
	t.Logf("%d records through 2 pauses: every key counted exactly %d times", records, records/keys)
}

// Exactly-once state through crashes while state moves: right after a
// crashed node restarts, the nodes that took over its instances hand their
// key groups back to it; a second node is SIGKILLed while such a handoff is
// still pending, so the rollback runs while state is on its way. The chunks
// read before the rollback are from after the checkpoint everyone goes back
// to: the exporter must stop and forget them and the receiver refuse them,
// or the restored counts are overwritten with newer ones and the replayed
// records are counted twice (as 497 of 3000 keys once were).
func TestExactlyOnceStateThroughCrashesDuringHandoffs(t *testing.T) {
	const records, keys = 180_000, 3000
	c, ids := startCounting(t, records, keys, nil)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	restarted, hits := ids[rng.IntN(len(ids))], 0
	// pendingHandoff polls the running nodes until one reports a pending
	// handoff (returned) or, once every node sees all the members (the
	// restarted one rejoined), for 3 s more. It starts as soon as the
	// restarted node's process is up: the handoffs back to it begin when
	// the first node sees it, and they may all be done by the time every
	// node does (waiting for that first caught one in ten attempts under
	// load).
	pendingHandoff := func() string {
		var settled time.Time
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) && (settled.IsZero() || time.Since(settled) < 3*time.Second) {
			for _, n := range c.running() {
				if st, err := n.status(); err == nil && len(st.Pending) > 0 {
					return n.id + ": " + strings.Join(st.Pending, "; ")
				}
			}
			if settled.IsZero() && c.allSee(len(ids)) {
				settled = time.Now()
			}
		}
		return ""
	}
	crashAndStart := func(id string) time.Duration {
		at := c.crash(id)
		c.waitFor(30*time.Second, id+"'s crash to be noticed", func() bool { return c.noneSees(id) })
		noticed := time.Since(at)
		c.start(id)
		return noticed
	}
	crashAndStart(restarted)
	for attempt := 1; hits < 3 && attempt <= 10; attempt++ {
		victim := ids[rng.IntN(len(ids))]
		for victim == restarted {
			victim = ids[rng.IntN(len(ids))]
		}
		// Kill the victim as soon as some node reports a pending handoff.
		pending := pendingHandoff()
		before := c.processed("count")
		noticed := crashAndStart(victim)
		if pending != "" {
			hits++
			t.Logf("attempt %d: killed %s at %d counted while %s (noticed after %v)", attempt, victim, before, pending, noticed.Round(time.Millisecond))
		} else {
			t.Logf("attempt %d: killed %s at %d counted after the handoffs to %s were done", attempt, victim, before, restarted)
		}
		restarted = victim
	}
	if hits == 0 {
		t.Fatalf("no crash hit a pending handoff in 10 attempts: the test did not test what it is for")
	}
	c.waitFor(60*time.Second, restarted+" to rejoin", func() bool { return c.allSee(len(ids)) })
	c.countAllThenCheck(records, keys)
	t.Logf("%d records through %d crashes during handoffs: every key counted exactly %d times", records, hits, records/keys)
}

// Exactly-once state through restarts faster than the membership TTL (a
// supervisor that restarts a crashed node at once): the others never see
// the node gone, only its incarnation change; they must treat it as a crash
// and roll back, and ask the new process for state instead of the dead one.
// In the end each key was counted exactly as often as it was generated.
func TestExactlyOnceStateThroughFastRestarts(t *testing.T) {
	const records, keys, restarts = 120_000, 3000, 3
	c, ids := startCounting(t, records, keys, nil)
	for k := 1; k <= restarts; k++ {
		victim := ids[k%len(ids)]
		before := c.processed("count")
		at := time.Now()
		c.crash(victim)
		c.start(victim)
		c.waitFor(60*time.Second, "the others to notice "+victim+"'s restart", func() bool {
			for _, e := range c.events() {
				if e.What == "member-left" && e.Peer == victim && e.Node != victim && e.Time.After(at) {
					return true
				}
			}
			return false
		})
		c.waitFor(60*time.Second, "progress after "+victim+"'s restart", func() bool { return c.settled(at) && c.processed("count") > before })
		t.Logf("restart %d: %s SIGKILLed at %d counted and restarted at once", k, victim, before)
	}
	c.countAllThenCheck(records, keys)
	t.Logf("%d records through %d fast restarts: every key counted exactly %d times", records, restarts, records/keys)
}

// Exactly-once through a crash one node sees late. n1, the checkpoint
// coordinator, sees n3's fast restart at once and rolls every node back;
// n2 acts on membership changes 2 s late (-settle), so it takes the
// rollback first and then, for up to 2 s, sends records of the new
// generation to n3's dead process. When it sees the crash it gives them
// up, and the rollback under way covers none of them: unless the
// coordinator rolls back again, the checkpoints that follow have n2's
// generator past records no counter counted (21 of 120,000 were lost so
// in one run of TestExactlyOnceStateThroughFastRestarts, where every node
// acts 200 ms after it sees a change and one saw it 150 ms after n1).
func TestExactlyOnceThroughACrashOneNodeSeesLate(t *testing.T) {
	const records, keys = 90_000, 3000
	c, _ := startCounting(t, records, keys, func(id string) []string {
		if id == "n2" {
			return []string{"-settle", "2s"}
		}
		return nil
	})
	// n2 must have seen the first n3 (it acts 2 s late) to see it crash.
	c.waitFor(time.Minute, "every node to see all three", func() bool { return c.allSee(3) })
	at := time.Now()
	c.crash("n3")
	c.start("n3")
	c.waitFor(60*time.Second, "n2 to notice n3's restart", func() bool {
		for _, e := range c.events() {
			if e.What == "member-left" && e.Peer == "n3" && e.Node == "n2" && e.Time.After(at) {
				return true
			}
		}
		return false
	})
	c.countAllThenCheck(records, keys)
	t.Logf("%d records through a restart one node saw %v late: every key counted exactly %d times", records, 2*time.Second, records/keys)
}

// countAllThenCheck waits until every record is counted, then checks the
// counts (stopAndCheckCounts). When the count stops short, it checks them
// all the same: which keys are short, and by how much, tells which
// records were lost.
func (c *cluster) countAllThenCheck(records, keys int) {
	c.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for c.processed("count") != int64(records) {
		if time.Now().After(deadline) {
			c.dumpLogs()
			c.t.Errorf("timed out after 3m waiting for every record counted: %d of %d", c.processed("count"), records)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.stopAndCheckCounts(records, keys)
}

// stopAndCheckCounts stops n1, n2 and n3 in turn (each hands its state to
// the others, so the last holds every count) and fails the test unless
// each of keys keys was counted exactly records/keys times.
func (c *cluster) stopAndCheckCounts(records, keys int) {
	c.t.Helper()
	c.stop("n1")
	c.stop("n2")
	c.stop("n3")
	counts := readCounts(c.t, c.dir+"/n3/data")
	// Every key wrong, in key order (key k has records k, k+keys, …: the
	// pattern says which generator instance's records went missing or
	// twice, and from where).
	var wrong []string
	for k := range keys {
		key := testkinds.Key(int64(k), keys)
		if n := counts[key]; n != int64(records/keys) {
			wrong = append(wrong, fmt.Sprintf("%s:%d", key, n))
		}
	}
	if len(counts) != keys || len(wrong) > 0 {
		n := len(wrong)
		if n > 60 {
			wrong = append(wrong[:60], "…")
		}
		c.t.Fatalf("%d keys counted (want %d), %d with a count other than %d: %s", len(counts), keys, n, records/keys, strings.Join(wrong, " "))
	}
}

// noneSees reports whether no running node lists id as a member.
func (c *cluster) noneSees(id string) bool {
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
}

// settled reports whether no running node waits for state (no pending
// handoff) and a checkpoint completed after since.
func (c *cluster) settled(since time.Time) bool {
	checkpointed := false
	for _, n := range c.running() {
		st, err := n.status()
		if err != nil || len(st.Pending) > 0 {
			return false
		}
		if ck := st.Checkpoints; ck != nil && ck.LastTime.After(since) {
			checkpointed = true
		}
	}
	return checkpointed
}

// allSee reports whether every running node lists members members.
func (c *cluster) allSee(members int) bool {
	for _, n := range c.running() {
		if st, err := n.status(); err != nil || len(st.Members) != members {
			return false
		}
	}
	return true
}
