package mesos

import (
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// Agents that go away and come back. The framework is PARTITION_AWARE, so
// the master tells it apart:
//
//   - TASK_UNREACHABLE: the master cannot reach the task's agent
//     (partition, crash, reboot). The task may still run and, if its node
//     can reach Consul, still be a member of the cluster. The scheduler
//     waits: the slot is not relaunched, since a replacement could run
//     next to the old node for the whole partition, two nodes of one slot
//     at once. The cluster does without the node meanwhile (its instances
//     move to the other nodes once it leaves Consul). On Mesos 1.5 and
//     later the master re-adds the task when the agent comes back and
//     reports its state (TASK_RUNNING, REASON_AGENT_REREGISTERED): the
//     task simply goes on; a task the scheduler wanted dead is killed
//     again then (a KILL sent while it was unreachable is not remembered by
//     the master).
//   - TASK_GONE, TASK_GONE_BY_OPERATOR, TASK_UNKNOWN: the task is gone for
//     good (its agent came back without it, an operator marked the agent
//     gone, the master forgot the agent): the slot is relaunched, after its
//     last node has left the cluster (see members.go), without counting a
//     failure.
//
// A reconciliation answer that a task the scheduler launched a moment ago
// is unknown (TASK_GONE, TASK_LOST, TASK_UNKNOWN) is not believed at
// once: the master handles an ACCEPT asynchronously (authorization), so a
// RECONCILE sent right after it can be answered before the task exists.
// Relaunching on such an answer would run the slot twice until one of the
// two is killed. Such answers are ignored for launchSettle after the
// launch, and the task is asked about again.

// settling reports whether st is an early "unknown" answer about t that
// is not to be believed yet.
func (m *machine) settling(now time.Time, t *task, st mesos.TaskStatus) bool {
	if st.GetReason() != mesos.REASON_RECONCILIATION || t.reported || t.acceptRefused {
		return false
	}
	switch st.GetState() {
	case mesos.TASK_GONE, mesos.TASK_LOST, mesos.TASK_UNKNOWN:
		return now.Sub(t.launched) < m.cfg.launchSettle
	}
	return false
}

// reachability records whether t's agent is reachable, given a
// non-terminal state. A task that comes back and was to be killed is
// killed again at once.
func (m *machine) reachability(now time.Time, t *task, state mesos.TaskState, out *output) {
	switch {
	case state == mesos.TASK_UNREACHABLE && t.unreachableSince.IsZero():
		t.unreachableSince = now
		m.dirty = true
	case state != mesos.TASK_UNREACHABLE && !t.unreachableSince.IsZero():
		t.unreachableSince = time.Time{}
		m.dirty = true
		if t.kill {
			t.killSent = time.Time{}
			m.kill(now, t, out)
		}
	}
}
