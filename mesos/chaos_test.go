package mesos_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/mesos/mesostest"
)

// TestNeverTwoCopies kills, partitions and restores agents at random, 20
// times, under a pool of three nodes, and checks through Consul (as the
// nodes see each other: blocking queries on the cluster's service, every
// check passing) that no node identity (slot) was ever active twice; and,
// at every state change of the master, that no two task processes of one
// slot ran (and were not stopped) at once. In the end every partition is
// healed and every dead agent marked gone: the pool must run its three
// nodes again, each its slot's only member. SLUICE_TEST_SEED replays a
// run.
func TestNeverTwoCopies(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SLUICE_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (SLUICE_TEST_SEED)", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))

	next := 0
	newAgent := func() mesostest.AgentSpec {
		next++
		return localAgent(mesostest.AgentSpec{ID: fmt.Sprintf("agent-%d", next), CPUs: 1, Mem: 512})
	}
	e := newEnvWith(t, mesostest.Config{Agents: []mesostest.AgentSpec{newAgent(), newAgent(), newAgent()}})
	ids := e.watchIdentities()
	procs := e.watchSlotProcesses()
	cfg := e.config("s1")
	s := e.start(cfg, nodePool("count", 3))
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := json.MarshalIndent(s.Status(), "", "  ")
			t.Logf("scheduler status:\n%s\nagents: %+v", b, e.master.Agents())
		}
	})
	e.waitMaster(waitTimeout, "3 running tasks", func() bool { return len(e.running()) == 3 })

	type agentState int
	const (
		isUp agentState = iota
		partitioned
		dead // killed, not yet marked gone
	)
	agents := map[string]agentState{"agent-1": isUp, "agent-2": isUp, "agent-3": isUp}
	pick := func(want ...agentState) string {
		var ids []string
		for id, st := range agents {
			if slices.Contains(want, st) {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return ""
		}
		slices.Sort(ids)
		return ids[rng.IntN(len(ids))]
	}
	start := time.Now()
	var log []string
	for i := 0; i < 20; i++ {
		var action string
		switch r := rng.IntN(3); {
		case r == 0 && pick(isUp, partitioned) != "":
			// Kill: the machine dies (the master sees a partition); an
			// operator marks it gone now or later; a new agent replaces it.
			id := pick(isUp, partitioned)
			if err := e.master.LoseAgent(id); err != nil {
				t.Fatal(err)
			}
			action = "kill " + id
			agents[id] = dead
			if rng.IntN(2) == 0 {
				if err := e.master.MarkAgentGone(id); err != nil {
					t.Fatal(err)
				}
				delete(agents, id)
				action += " (marked gone)"
			}
			spec := newAgent()
			if err := e.master.AddAgentSpec(spec); err != nil {
				t.Fatal(err)
			}
			agents[spec.ID] = isUp
		case r == 1 && pick(isUp) != "":
			id, isolate := pick(isUp), rng.IntN(2) == 0
			if err := e.master.PartitionAgent(id, isolate); err != nil {
				t.Fatal(err)
			}
			agents[id] = partitioned
			action = fmt.Sprintf("partition %s (isolated: %v)", id, isolate)
		default:
			if id := pick(partitioned); id != "" {
				if err := e.master.HealAgent(id); err != nil {
					t.Fatal(err)
				}
				agents[id] = isUp
				action = "restore " + id
			} else if id := pick(dead); id != "" {
				if err := e.master.MarkAgentGone(id); err != nil {
					t.Fatal(err)
				}
				delete(agents, id)
				action = "mark gone " + id
			} else {
				i-- // nothing to restore: draw again
				continue
			}
		}
		log = append(log, action)
		if v, _ := ids.result(); len(v) > 0 {
			t.Fatalf("after %s: node identities active twice in Consul:\n%s", strings.Join(log, "; "), strings.Join(v, "\n"))
		}
		if pv := procs(); len(pv) > 0 {
			t.Fatalf("after %s: two processes of one slot at once:\n%s", strings.Join(log, "; "), strings.Join(pv, "\n"))
		}
		// Let things happen for a random while: 1-40 allocation rounds
		// (50 ms each), sometimes until the pool has recovered.
		up := 0
		for _, st := range agents {
			if st == isUp {
				up++
			}
		}
		// (Two agents that are up can host any three nodes.)
		if rng.IntN(4) == 0 && up >= 2 {
			e.waitMaster(waitTimeout, "the pool recovered", func() bool {
				p := s.Status().Pools[0]
				return p.Running+p.Unreachable == 3
			})
		} else {
			rounds := e.master.AllocationRounds() + uint64(1+rng.IntN(40))
			e.waitMaster(waitTimeout, "allocation rounds", func() bool { return e.master.AllocationRounds() >= rounds })
		}
	}
	t.Logf("actions (%v): %s", time.Since(start).Round(time.Millisecond), strings.Join(log, "; "))

	// Heal everything; the pool recovers.
	for id, st := range agents {
		switch st {
		case partitioned:
			if err := e.master.HealAgent(id); err != nil {
				t.Fatal(err)
			}
		case dead:
			if err := e.master.MarkAgentGone(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	sluicetest.WaitEvery(t, 2*waitTimeout, 20*time.Millisecond, "the pool running its 3 nodes", func() bool {
		p := s.Status().Pools[0]
		return p.Running == 3 && p.Unreachable == 0 && p.Pending == 0 && p.Killing == 0
	})
	e.waitMembersAreTasks()
	t.Logf("recovered %v after the first action; %d tasks launched", time.Since(start).Round(time.Millisecond), len(e.master.Tasks()))

	// The watch has followed up to the end.
	want := slices.Sorted(maps.Keys(e.running()))
	sluicetest.WaitFor(t, 10*time.Second, "the identity watch to see the final members", func() bool {
		return slices.Equal(ids.current(), want)
	})
	ids.stop()
	v, n := ids.result()
	t.Logf("%d snapshots of the cluster's members", n)
	if len(v) > 0 {
		t.Errorf("node identities active twice in Consul (%d snapshots):\n%s", n, strings.Join(v, "\n"))
	}
	if pv := procs(); len(pv) > 0 {
		t.Errorf("two processes of one slot at once:\n%s", strings.Join(pv, "\n"))
	}
}

// watchSlotProcesses records, at every state change of the master, the
// slots with more than one task process running and not stopped.
func (e *env) watchSlotProcesses() func() []string {
	var (
		mu         sync.Mutex
		violations []string
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	ctx, cancel := contextUntil(stop)
	go func() {
		defer close(done)
		_ = e.master.WaitUntil(ctx, func() bool {
			bySlot := map[string][]string{}
			for _, tk := range e.master.Tasks() {
				if tk.ProcessRunning && !tk.Frozen {
					bySlot[slotOf(tk.ID)] = append(bySlot[slotOf(tk.ID)], tk.ID)
				}
			}
			mu.Lock()
			for slot, ids := range bySlot {
				if len(ids) > 1 && len(violations) < 20 {
					violations = append(violations, slot+": "+strings.Join(ids, ", "))
				}
			}
			mu.Unlock()
			return false
		})
	}()
	e.t.Cleanup(func() { cancel(); close(stop); <-done })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(violations)
	}
}
