package mesos_test

import (
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/mesos"
	"github.com/sluicehq/sluice/mesos/mesosstatus"
	"github.com/sluicehq/sluice/mesos/mesostest"
)

func twoAgents() []mesostest.AgentSpec {
	return []mesostest.AgentSpec{
		{ID: "agent-1", CPUs: 2, Mem: 2048, Disk: 4096},
		{ID: "agent-2", CPUs: 2, Mem: 2048, Disk: 4096},
	}
}

// TestLaunchJoinAndProcess launches 3 node tasks over 2 agents; the nodes
// join the cluster in Consul and process records.
func TestLaunchJoinAndProcess(t *testing.T) {
	e := newEnv(t, twoAgents()...)
	s := e.start(e.config("s1"), nodePool("count", 3))

	e.waitMaster(waitTimeout, "3 running tasks", func() bool { return len(e.running()) == 3 })
	perAgent := map[string]int{}
	for _, tk := range e.running() {
		perAgent[tk.AgentID]++
		if !strings.HasPrefix(tk.ID, "count.") {
			t.Errorf("task ID %q", tk.ID)
		}
	}
	if perAgent["agent-1"] == 0 || perAgent["agent-2"] == 0 {
		t.Errorf("tasks per agent = %v, want both agents used", perAgent)
	}

	e.waitMembersAreTasks()

	var first int64
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "records counted", func() bool { first = e.processed("count"); return first > 0 })
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the count growing", func() bool { return e.processed("count") > first })

	st := s.Status()
	if st.Role != mesosstatus.RoleLeader || st.Subscription.State != mesosstatus.Subscribed || st.FrameworkID == "" {
		t.Errorf("status = %+v", st)
	}
	if p := st.Pools[0]; p.Desired != 3 || p.Running != 3 || p.Pending != 0 || p.Restarts != 0 {
		t.Errorf("pool status = %+v", p)
	}
	sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "offers suppressed", func() bool {
		fw := e.master.Frameworks()
		return len(fw) == 1 && fw[0].Suppressed
	})
	// The status reaches Consul.
	sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "status in Consul", func() bool {
		st, err := e.readStatus()
		return err == nil && st.FrameworkID == s.Status().FrameworkID && len(st.Tasks) == 3 && st.Pools[0].Running == 3
	})
}

// TestRelaunch kills a task's process (relaunched in its slot), then an
// agent (its tasks relaunched on the other).
func TestRelaunch(t *testing.T) {
	e := newEnv(t, mesostest.AgentSpec{ID: "agent-1", CPUs: 2, Mem: 2048}, mesostest.AgentSpec{ID: "agent-2", CPUs: 2, Mem: 2048})
	peak := e.watchProcesses()
	s := e.start(e.config("s1"), nodePool("count", 3))
	e.waitMaster(waitTimeout, "3 running tasks", func() bool { return len(e.running()) == 3 })

	// Kill one process: the slot gets a new task.
	before := e.running()
	victim := slices.Sorted(maps.Keys(before))[0]
	victimSlot := strings.Join(strings.Split(victim, ".")[:2], ".") + "."
	if err := e.master.KillTaskProcess(victim); err != nil {
		t.Fatal(err)
	}
	e.waitMaster(waitTimeout, "the killed task replaced", func() bool {
		r := e.running()
		if _, ok := r[victim]; ok || len(r) != 3 {
			return false
		}
		for id := range r {
			if _, old := before[id]; !old && strings.HasPrefix(id, victimSlot) {
				return true
			}
		}
		return false
	})
	sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "the restart in the status", func() bool {
		st := s.Status()
		return st.Pools[0].Restarts == 1 && st.Pools[0].Running == 3
	})

	// Lose the agent with the most tasks: the master cannot tell a dead
	// agent from a partitioned one (TASK_UNREACHABLE), so its tasks are
	// waited for, not replaced; once an operator marks the agent gone they
	// move to the other one.
	counts := map[string]int{}
	for _, tk := range e.running() {
		counts[tk.AgentID]++
	}
	lost, other := "agent-1", "agent-2"
	if counts["agent-2"] > counts["agent-1"] {
		lost, other = other, lost
	}
	if err := e.master.LoseAgent(lost); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "the lost tasks unreachable", func() bool {
		p := s.Status().Pools[0]
		return p.Unreachable == counts[lost] && p.Pending == 0
	})
	launchedBefore := len(e.master.Tasks())
	rounds := e.master.AllocationRounds()
	e.waitMaster(10*time.Second, "20 allocation rounds", func() bool { return e.master.AllocationRounds() >= rounds+20 })
	if n := len(e.master.Tasks()); n != launchedBefore {
		t.Fatalf("%d tasks launched while the lost ones were unreachable", n-launchedBefore)
	}
	if err := e.master.MarkAgentGone(lost); err != nil {
		t.Fatal(err)
	}
	e.waitMaster(waitTimeout, "all tasks on "+other, func() bool {
		r := e.running()
		if len(r) != 3 {
			return false
		}
		for _, tk := range r {
			if tk.AgentID != other {
				return false
			}
		}
		return true
	})
	e.waitMembersAreTasks()
	if p := peak(); p > 3+counts[lost] {
		// While a killed node still runs its replacement may start; never
		// more than one extra per relaunched slot.
		t.Errorf("peak of %d task processes", p)
	}
	st := s.Status()
	if p := st.Pools[0]; p.Running != 3 || p.Restarts != 1+counts[lost] || p.Failed {
		t.Errorf("pool status = %+v", p)
	}
	if !slices.ContainsFunc(st.Problems, func(p mesosstatus.Problem) bool { return p.Kind == mesosstatus.ProblemAgent }) {
		t.Errorf("agent loss not in problems: %+v", st.Problems)
	}
}

// TestRetriesExhausted: a task that keeps failing is relaunched with
// backoff up to the pool's retries, then the deployment is failed with the
// last reason.
func TestRetriesExhausted(t *testing.T) {
	e := newEnv(t, mesostest.AgentSpec{ID: "agent-1", CPUs: 2, Mem: 1024})
	s := e.start(e.config("s1"), shellPool("crash", 1, "echo starting; exit 3", 2), shellPool("ok", 1, "sleep 600", 0))
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the pool failed", func() bool {
		st := s.Status()
		return len(st.Pools) == 2 && st.Pools[0].Failed
	})
	e.waitMaster(waitTimeout, "no crash task left", func() bool {
		for _, tk := range e.master.Tasks() {
			if strings.HasPrefix(tk.ID, "crash.") && tk.Active {
				return false
			}
		}
		return true
	})
	n := 0
	for _, tk := range e.master.Tasks() {
		if strings.HasPrefix(tk.ID, "crash.") {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d launches, want 3 (1 + 2 retries)", n)
	}
	st := s.Status()
	p := st.Pools[0]
	if !strings.Contains(p.FailedReason, "Command exited with status 3") || !strings.Contains(p.FailedReason, "retries: 2") {
		t.Errorf("failed reason = %q", p.FailedReason)
	}
	if st.Pools[1].Failed || st.Pools[1].Running != 1 {
		t.Errorf("the other pool: %+v", st.Pools[1])
	}
	if r := pending(st); len(r) != 1 || !strings.HasPrefix(r[0], "deployment failed: ") {
		t.Errorf("pending = %q", r)
	}
	sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "the failure in Consul", func() bool {
		st, err := e.readStatus()
		return err == nil && len(st.Pools) == 2 && st.Pools[0].Failed && st.Pools[0].FailedReason == p.FailedReason
	})
	// The failed state survives a restart of the scheduler.
	s.stop(t)
	s2 := e.start(e.config("s2"), shellPool("crash", 1, "echo starting; exit 3", 2), shellPool("ok", 1, "sleep 600", 0))
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the new scheduler subscribed", func() bool {
		st := s2.Status()
		return st.Subscription.State == mesosstatus.Subscribed && len(st.Pools) == 2 && st.Pools[1].Running == 1
	})
	if st := s2.Status(); !st.Pools[0].Failed {
		t.Errorf("failed pool relaunched by the next scheduler: %+v", st.Pools[0])
	}
	// A new spec is a new deployment.
	fixed := shellPool("crash", 1, "sleep 600", 2)
	if err := s2.SetPools([]mesos.Pool{fixed, shellPool("ok", 1, "sleep 600", 0)}); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the fixed pool running", func() bool {
		st := s2.Status()
		return !st.Pools[0].Failed && st.Pools[0].Running == 1
	})
}

// TestRunStopsGoroutines checks that Run, once it returned, leaves no
// goroutine behind: subscriber, publisher, HTTP server, Consul lock
// monitor and session renewal, idle HTTP connections.
func TestRunStopsGoroutines(t *testing.T) {
	e := newEnv(t, mesostest.AgentSpec{ID: "agent-1", CPUs: 1, Mem: 512})
	before := runtime.NumGoroutine()
	s := e.start(e.config("s1"), shellPool("p", 1, "sleep 600", 3))
	e.waitMaster(waitTimeout, "the task running", func() bool { return len(e.running()) == 1 })
	if err := s.SetPools(nil); err != nil {
		t.Fatal(err)
	}
	e.waitMaster(waitTimeout, "the task killed", func() bool {
		tk := e.master.Tasks()
		return e.master.RunningProcesses() == 0 && len(tk) == 1 && !tk[0].Active
	})
	s.stop(t)
	deadline := time.Now().Add(15 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Run returned, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond) // polling with a deadline: goroutines end asynchronously
	}
}
