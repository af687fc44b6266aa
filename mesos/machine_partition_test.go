package mesos

import (
	"fmt"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// TestReconcileBackoff: a task the master does not answer about (its
// agent has not re-registered with a new master) is asked about again
// after 1 s, then 2 s, 4 s … up to ReconcileRetry; an answer ends it.
func TestReconcileBackoff(t *testing.T) {
	h := newHarness(t, pool("p", 1, 1, 128, 3))
	h.subscribe()
	h.run(offer("a1", 2, 1024, 0))
	id := liveIDs(h.m)[0]
	h.m.disconnected(h.now, fmt.Errorf("master failed over"))
	if out := h.subscribe(); len(out.reconcile) != 2 {
		t.Fatalf("reconcile after subscribing = %+v", out.reconcile)
	}
	start := h.now
	var asked []time.Duration
	for h.now.Sub(start) < 2*time.Minute {
		h.advance(250 * time.Millisecond)
		for _, r := range h.m.tick(h.now).reconcile {
			if _, ok := r.tasks[id]; ok {
				asked = append(asked, h.now.Sub(start))
			}
		}
	}
	want := []time.Duration{1, 3, 7, 15, 31, 61, 91}
	if len(asked) != len(want) {
		t.Fatalf("asked at %v, want at %v s", asked, want)
	}
	for i := range want {
		if asked[i] != want[i]*time.Second {
			t.Fatalf("asked at %v, want at %v s", asked, want)
		}
	}
	h.update(withReason(status(id, "a1", mesos.TASK_RUNNING, false), mesos.REASON_RECONCILIATION, ""))
	for i := 0; i < 60; i++ { // the full reconciliation is due at 5 min
		h.advance(time.Second)
		if out := h.m.tick(h.now); len(out.reconcile) > 0 {
			t.Fatalf("asked again %v after the answer: %+v", h.now.Sub(start), out.reconcile)
		}
	}
}

// TestEarlyUnknownAnswerNotBelieved: the master answers a reconciliation
// about a task launched a moment ago before it processed the ACCEPT
// (TASK_GONE): the scheduler neither relaunches nor kills anything, and
// asks again; a later TASK_RUNNING finds the one task in place.
func TestEarlyUnknownAnswerNotBelieved(t *testing.T) {
	h := newHarness(t, pool("p", 1, 1, 128, 3))
	h.subscribe()
	id := launched(h.offers(offer("a1", 2, 1024, 0)))[0]
	h.advance(time.Second)
	out := h.update(withReason(status(id, "a1", mesos.TASK_GONE, false), mesos.REASON_RECONCILIATION, "Reconciliation: Task is unknown to the agent"))
	if len(out.kills) > 0 || len(launched(h.offers(offer("a1", 2, 1024, 0)))) > 0 {
		t.Fatalf("acted on an early answer: %+v", out)
	}
	if tk := h.m.tasks[id]; tk == nil || tk.reported || tk.terminal() {
		t.Fatalf("task %s after an early answer: %+v", id, tk)
	}
	h.advance(time.Second)
	if out := h.m.tick(h.now); len(out.reconcile) != 1 || out.reconcile[0].tasks[id] != "a1" {
		t.Fatalf("not asked again: %+v", out.reconcile)
	}
	h.update(status(id, "a1", mesos.TASK_RUNNING, true))
	if live := liveIDs(h.m); len(live) != 1 || live[0] != id {
		t.Fatalf("live tasks %v, want %s", live, id)
	}
}

// TestUnreachableIsWaitedFor: a task whose agent is unreachable is neither
// replaced nor forgotten; when the agent comes back it goes on, and one
// that was to be killed meanwhile is killed then. A task gone for good is
// replaced without counting a failure.
func TestUnreachableIsWaitedFor(t *testing.T) {
	h := newHarness(t, pool("p", 2, 1, 128, 0))
	h.subscribe()
	h.run(offer("a1", 1, 1024, 0), offer("a2", 1, 1024, 0))
	byAgent := map[string]string{}
	for id, tk := range h.m.tasks {
		byAgent[tk.agentID] = id
	}
	for _, a := range []string{"a1", "a2"} {
		h.update(withReason(status(byAgent[a], a, mesos.TASK_UNREACHABLE, false), mesos.REASON_AGENT_REMOVED, "Agent removed"))
	}
	h.advance(time.Hour)
	h.m.tick(h.now)
	if got := launched(h.offers(offer("a3", 4, 4096, 0))); len(got) != 0 {
		t.Fatalf("replaced unreachable tasks: %v", got)
	}
	st := h.m.status(h.now)
	if st.Pools[0].Unreachable != 2 || st.Pools[0].Pending != 0 || st.Pools[0].Restarts != 0 {
		t.Errorf("pool status = %+v", st.Pools[0])
	}
	// Scale down while unreachable: the KILL is lost with the agent.
	out := h.m.setPools(h.now, []Pool{pool("p", 1, 1, 128, 0)})
	if len(out.kills) != 1 || out.kills[0].taskID != byAgent["a2"] && out.kills[0].taskID != byAgent["a1"] {
		t.Fatalf("kills = %+v", out.kills)
	}
	doomed := out.kills[0].taskID
	doomedAgent := h.m.tasks[doomed].agentID
	keptAgent := map[string]string{"a1": "a2", "a2": "a1"}[doomedAgent]
	h.update(withReason(status(doomed, doomedAgent, mesos.TASK_UNREACHABLE, false), mesos.REASON_RECONCILIATION, "Reconciliation: Task is unreachable"))
	// The agents come back: the kept task goes on, the doomed one is
	// killed again at once.
	out = h.update(withReason(status(doomed, doomedAgent, mesos.TASK_RUNNING, false), mesos.REASON_AGENT_REREGISTERED, "Unreachable agent re-reregistered"))
	if len(out.kills) != 1 || out.kills[0].taskID != doomed {
		t.Fatalf("kills after the agent came back = %+v", out.kills)
	}
	kept := byAgent[keptAgent]
	out = h.update(withReason(status(kept, keptAgent, mesos.TASK_RUNNING, false), mesos.REASON_AGENT_REREGISTERED, "Unreachable agent re-reregistered"))
	if len(out.kills) != 0 || h.m.tasks[kept].unreachableSince != (time.Time{}) {
		t.Fatalf("kept task after coming back: kills %+v, %+v", out.kills, h.m.tasks[kept])
	}
	// An agent marked gone: its task is replaced, no failure counted
	// (retries: 0 would fail the pool).
	h.update(withReason(status(kept, keptAgent, mesos.TASK_GONE_BY_OPERATOR, false), mesos.REASON_AGENT_REMOVED_BY_OPERATOR, "gone"))
	h.advance(time.Second)
	h.m.tick(h.now)
	if got := launched(h.offers(offer("a3", 4, 4096, 0))); len(got) != 1 || h.m.pools["p"].failed {
		t.Fatalf("relaunch after TASK_GONE_BY_OPERATOR = %v, pool failed %v", got, h.m.pools["p"].failed)
	}
}

// TestUnreachableAnswerAdoptsNothing: a launch dropped because its agent
// was lost (invalid offer), then the answer to a question sent before,
// "unreachable", about the task that never was: nothing is adopted, the
// slot is relaunched.
func TestUnreachableAnswerAdoptsNothing(t *testing.T) {
	h := newHarness(t, pool("p", 1, 1, 128, 3))
	h.subscribe()
	id := launched(h.offers(offer("a1", 2, 1024, 0)))[0]
	h.m.failure(h.now, "a1", "")
	h.update(withReason(status(id, "a1", mesos.TASK_DROPPED, false), mesos.REASON_INVALID_OFFERS, "Task launched with invalid offers"))
	h.update(withReason(status(id, "a1", mesos.TASK_UNREACHABLE, false), mesos.REASON_RECONCILIATION, "Reconciliation: Task is unreachable"))
	if live := liveIDs(h.m); len(live) != 0 {
		t.Fatalf("live tasks %v, want none", live)
	}
	if got := launched(h.offers(offer("a2", 2, 1024, 0))); len(got) != 1 {
		t.Fatalf("relaunch = %v, want one task", got)
	}
}
