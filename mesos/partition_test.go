package mesos_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/mesos/mesosstatus"
	"github.com/sluicehq/sluice/mesos/mesostest"
)

// TestPartitionedAgentComesBack partitions the agent of one of two node
// tasks. Whether the partition cuts the node off from the master only (it
// goes on, in the cluster) or from everything (it stops, and the cluster
// drops it), the scheduler waits: its slot is not relaunched, so no
// second node of the slot joins the cluster. When the agent comes back the
// master reports the task running again and the scheduler kills nothing.
// The node cut off from the master only goes on; the stopped one finds on
// waking that its membership lapsed (the cluster went on without it), so
// it fences itself and exits, and the scheduler relaunches its slot. No
// identity is ever active twice in Consul.
func TestPartitionedAgentComesBack(t *testing.T) {
	for _, isolate := range []bool{false, true} {
		name := "from the master only"
		if isolate {
			name = "isolated"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, twoAgents()...)
			ids := e.watchIdentities()
			peak := e.watchProcesses()
			s := e.start(e.config("s1"), nodePool("count", 2))
			e.waitMaster(waitTimeout, "2 running tasks", func() bool { return len(e.running()) == 2 })
			e.waitMembersAreTasks()
			before := slices.Sorted(maps.Keys(e.running()))
			victim := e.running()[before[0]]

			launchedBefore := len(e.master.Tasks())
			if err := e.master.PartitionAgent(victim.AgentID, isolate); err != nil {
				t.Fatal(err)
			}
			sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "the task unreachable", func() bool {
				p := s.Status().Pools[0]
				return p.Unreachable == 1 && p.Running == 1
			})
			if isolate {
				// The stopped node leaves the cluster when its TTL expires.
				sluicetest.WaitEvery(t, 20*time.Second, 20*time.Millisecond, "the stopped node gone from Consul", func() bool {
					return len(e.members()) == 1
				})
			}
			// A scheduler that replaced the task would revive offers and
			// launch within a few allocation rounds: give it 40, and
			// several of its ticks.
			rounds := e.master.AllocationRounds()
			e.waitMaster(20*time.Second, "40 allocation rounds", func() bool { return e.master.AllocationRounds() >= rounds+40 })
			if n := len(e.master.Tasks()) - launchedBefore; n != 0 {
				t.Fatalf("%d tasks launched during the partition, want none", n)
			}
			st := s.Status()
			if !slices.ContainsFunc(st.Tasks, func(ts mesosstatus.TaskStatus) bool {
				return ts.ID == victim.ID && ts.State == "TASK_UNREACHABLE"
			}) {
				t.Errorf("status tasks %+v, want %s unreachable", st.Tasks, victim.ID)
			}

			if err := e.master.HealAgent(victim.AgentID); err != nil {
				t.Fatal(err)
			}
			if isolate {
				sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the fenced task to end and its slot to run again", func() bool {
					_, old := e.running()[victim.ID]
					return !old && len(e.running()) == 2 && s.Status().Pools[0].Unreachable == 0
				})
				e.waitMembersAreTasks()
				if got := e.running(); !slices.Contains(slices.Collect(maps.Keys(got)), before[1]) {
					t.Errorf("running tasks %v, want %s among them (it was not partitioned)", slices.Sorted(maps.Keys(got)), before[1])
				}
			} else {
				sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "both tasks running again", func() bool {
					p := s.Status().Pools[0]
					return p.Running == 2 && p.Unreachable == 0
				})
				e.waitMembersAreTasks()
				if got := slices.Sorted(maps.Keys(e.running())); !slices.Equal(got, before) {
					t.Errorf("running tasks %v, want the same %v", got, before)
				}
			}
			for _, c := range e.master.Calls() {
				if c.Type == scheduler.Call_KILL {
					t.Errorf("a task was killed: %+v", c)
				}
			}
			if p := peak(); p > 2 {
				t.Errorf("peak of %d task processes, want at most 2", p)
			}
			// The watch must have followed Consul to the end (it sees the
			// tasks now running as the active members) for its record to
			// mean anything. How many snapshots that took depends on how
			// Consul's index changes coalesced: the node cut off from the
			// master only never leaves, so two can be all there is.
			want := slices.Sorted(maps.Keys(e.running()))
			sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the identity watch to see the running tasks active", func() bool {
				return slices.Equal(ids.current(), want)
			})
			ids.stop()
			if v, n := ids.result(); len(v) > 0 {
				t.Errorf("identities active twice (in %d snapshots): %s", n, strings.Join(v, "; "))
			}
		})
	}
}

// TestNoRelaunchOnEarlyUnknownAnswer: the master applies ACCEPTs late (as
// Mesos does while it authorizes them) and the scheduler reconciles all
// its tasks often, so it asks about a task before the master has added
// it, and hears that the task is unknown. It must not relaunch the slot
// (and then kill one of the two): one task per slot, no KILL.
func TestNoRelaunchOnEarlyUnknownAnswer(t *testing.T) {
	// A third agent has offers to spare while the ACCEPTs are pending (the
	// master holds the resources of an ACCEPT until it applies it).
	e := newEnv(t, append(twoAgents(), mesostest.AgentSpec{ID: "agent-3", CPUs: 2, Mem: 2048})...)
	e.master.SetAcceptDelay(2 * time.Second)
	cfg := e.config("s1")
	cfg.ReconcileInterval = 300 * time.Millisecond
	s := e.start(cfg, shellPool("p", 2, "sleep 600", 3))
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "two tasks running", func() bool {
		st := s.Status()
		return len(st.Pools) == 1 && st.Pools[0].Running == 2
	})
	// Another few full reconciliations with the tasks running.
	e.waitMaster(10*time.Second, "more reconciliations", func() bool {
		n := 0
		for _, c := range e.master.Calls() {
			if c.Type == scheduler.Call_RECONCILE {
				n++
			}
		}
		return n > 20
	})
	for _, c := range e.master.Calls() {
		if c.Type == scheduler.Call_KILL {
			t.Errorf("KILL call: %+v", c)
		}
	}
	if n := len(e.master.Tasks()); n != 2 {
		t.Errorf("%d tasks launched for 2 slots", n)
	}
	if st := s.Status(); st.Pools[0].Restarts != 0 {
		t.Errorf("restarts = %d, want 0", st.Pools[0].Restarts)
	}
}
