package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/consultest"
)

func TestSIGKILLedNodesInstancesResumeElsewhere(t *testing.T) {
	agent := consultest.Start(t)
	c := newCluster(t, agent.Addr(), "-records", "100000000", "-keys", "10000",
		"-rate", "10000", "-gen-parallelism", "3", "-count-parallelism", "12")
	for _, id := range []string{"n1", "n2", "n3"} {
		c.start(id)
	}
	c.waitFor(time.Minute, "100k records counted", func() bool { return c.processed("count") >= 100_000 })

	// The instances the survivors run before the kill must keep going.
	before := c.instanceProgress("count")
	var survivors []string
	for k := range before {
		if !strings.HasPrefix(k, "n2/") {
			survivors = append(survivors, k)
		}
	}
	slices.Sort(survivors)
	killedAt := c.crash("n2")
	total := func(p map[string]int64) (sum int64) {
		for _, k := range survivors {
			sum += p[k]
		}
		return sum
	}
	last, lastAt, maxGap := total(before), killedAt, time.Duration(0)
	for time.Since(killedAt) < 12*time.Second {
		time.Sleep(100 * time.Millisecond) // sampling period, not synchronisation
		if now := total(c.instanceProgress("count")); now > last {
			last, lastAt = now, time.Now()
		} else if gap := time.Since(lastAt); gap > maxGap {
			maxGap = gap
		}
	}

	events := c.events()
	var detected time.Time
	for _, e := range events {
		if e.What == "member-left" && e.Peer == "n2" && (detected.IsZero() || e.Time.Before(detected)) {
			detected = e.Time
		}
	}
	if detected.IsZero() {
		t.Fatal("no survivor noticed that n2 died")
	}
	// Instances active on n2 at the kill, and when each was active again.
	onN2 := map[string]bool{}
	for _, e := range events {
		k := fmt.Sprintf("%s/%d.%d", e.Operator, e.Epoch, e.Index)
		if e.Node == "n2" && e.Operator != "" && e.Time.Before(killedAt) {
			onN2[k] = e.What == "active"
		}
	}
	var resumed time.Duration
	for k, active := range onN2 {
		if !active {
			continue
		}
		var again time.Time
		for _, e := range events {
			if e.What == "active" && e.Node != "n2" && fmt.Sprintf("%s/%d.%d", e.Operator, e.Epoch, e.Index) == k && e.Time.After(killedAt) {
				again = e.Time
				break
			}
		}
		if again.IsZero() {
			t.Errorf("instance %s of the killed node never resumed elsewhere", k)
			continue
		}
		resumed = max(resumed, again.Sub(detected))
	}
	detection := detected.Sub(killedAt)
	t.Logf("SIGKILL → detection %v; its %d instances active elsewhere within %v of detection; survivors' longest pause in progress %v",
		detection.Round(time.Millisecond), len(onN2), resumed.Round(time.Millisecond), maxGap.Round(time.Millisecond))
	if detection > 5*time.Second {
		t.Errorf("failure detected after %v, want ≤ 5s", detection)
	}
	if resumed > 5*time.Second {
		t.Errorf("instances resumed %v after detection, want ≤ 5s", resumed)
	}
	if maxGap > time.Second {
		t.Errorf("the survivors' own instances stopped making progress for %v", maxGap)
	}
	checkNoDoubleActivity(t, events, map[string]time.Time{"n2": killedAt})
}

func TestConsulOutageKeepsProcessingAndConverges(t *testing.T) {
	agent := consultest.Start(t)
	c := newCluster(t, agent.Addr(), "-records", "100000000", "-keys", "10000",
		"-rate", "10000", "-gen-parallelism", "3", "-count-parallelism", "12")
	for _, id := range []string{"n1", "n2", "n3"} {
		c.start(id)
	}
	members := func(n *node) int {
		st, err := n.status()
		if err != nil {
			return -1
		}
		return len(st.Members)
	}
	c.waitFor(time.Minute, "all nodes to see 3 members", func() bool {
		for _, n := range c.nodes {
			if members(n) != 3 {
				return false
			}
		}
		return true
	})
	c.waitFor(time.Minute, "50k records counted", func() bool { return c.processed("count") >= 50_000 })

	agent.Stop()
	down := time.Now()
	start := c.processed("count")
	for time.Since(down) < 10*time.Second {
		time.Sleep(200 * time.Millisecond) // the outage lasts 10 s by design
	}
	during := c.processed("count") - start
	for _, n := range c.nodes {
		if m := members(n); m != 3 {
			t.Errorf("node %s sees %d members while Consul is down, want the last known 3", n.id, m)
		}
	}
	t.Logf("records counted during the 10 s Consul outage: %d", during)
	if during < 100_000 {
		t.Errorf("only %d records counted during the outage: processing stalled", during)
	}
	agent.Restart()
	restarted := time.Now()
	c.waitFor(time.Minute, "membership to converge after Consul returns", func() bool {
		for _, n := range c.nodes {
			if members(n) != 3 {
				return false
			}
		}
		for _, e := range c.events() {
			// Re-registration must not look like a crash to the others.
			if e.What == "member-left" && e.Time.After(down) {
				t.Fatalf("%s saw %s leave after the Consul restart", e.Node, e.Peer)
			}
		}
		return agent.Client() != nil && registered(t, agent) == 3
	})
	t.Logf("all 3 nodes registered again %v after Consul restarted", time.Since(restarted).Round(time.Millisecond))
	after := c.processed("count")
	c.waitFor(time.Minute, "processing after the restart", func() bool { return c.processed("count") > after+10_000 })
	checkNoDoubleActivity(t, c.events(), nil)
}

// registered counts the cluster's passing members in Consul's catalog.
func registered(t *testing.T, a *consultest.Agent) int {
	entries, _, err := a.Client().Health().Service("sluice", "", true, nil)
	if err != nil {
		return -1
	}
	return len(entries)
}
