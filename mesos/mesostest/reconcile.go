package mesostest

import (
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// reconcileLocked handles RECONCILE (reconciliation.md) as
// Master::reconcile does. Implicit (empty list): the latest state of every
// task the master knows for the framework (non-terminal, or terminal with
// unacknowledged updates) on registered agents. Explicit: for each listed
// task,
//
//  1. known: its latest state;
//  2. unknown, its agent (or, without an agent ID, any agent) not
//     re-registered since a master failover: no answer at all (the
//     scheduler has to ask again);
//  3. unknown, agent registered: TASK_GONE;
//  4. unknown, agent unreachable: TASK_UNREACHABLE;
//  5. unknown, agent marked gone: TASK_GONE_BY_OPERATOR;
//  6. unknown, agent unknown: TASK_UNKNOWN;
//
// TASK_LOST instead of 3-6 for frameworks that are not PARTITION_AWARE.
// All with REASON_RECONCILIATION, SOURCE_MASTER and no uuid.
func (m *Master) reconcileLocked(fw *framework, list []scheduler.Call_Reconcile_Task) {
	if len(list) == 0 {
		for _, t := range m.activeTasksLocked() {
			if t.fwID == fw.id && m.knownLocked(t) {
				m.sendLocked(fw, updateEvent(m.reconcileStatus(t)))
			}
		}
		return
	}
	for _, rt := range list {
		if t := m.tasks[taskKey{fw.id, rt.TaskID.Value}]; t != nil && m.knownLocked(t) {
			m.sendLocked(fw, updateEvent(m.reconcileStatus(t)))
			continue
		}
		if st, ok := m.unknownTaskStatus(fw, rt.TaskID.Value, rt.GetAgentID().GetValue()); ok {
			m.sendLocked(fw, updateEvent(st))
		}
	}
}

// reconcileStatus reports the state of the update currently being
// delivered (Mesos' status_update_state) if any, else the latest state.
func (m *Master) reconcileStatus(t *task) mesos.TaskStatus {
	state := t.state
	if len(t.pending) > 0 {
		state = t.pending[0].GetState()
	}
	st := m.masterStatus(t.id, t.agentID, state, mesos.REASON_RECONCILIATION, "Reconciliation: Latest task state")
	st.ExecutorID = &mesos.ExecutorID{Value: t.executorID}
	return st
}

// unknownTaskStatus answers about a task the master does not know (cases
// 2-6 of reconcileLocked); false means no answer.
func (m *Master) unknownTaskStatus(fw *framework, taskID, agentID string) (mesos.TaskStatus, bool) {
	pick := func(pa mesos.TaskState) mesos.TaskState {
		if fw.partitionAware {
			return pa
		}
		return mesos.TASK_LOST
	}
	a := m.agents[agentID]
	switch {
	case agentID == "" && m.anyRecoveringLocked(), a != nil && a.state == agentRecovering:
		m.logf("mesostest: dropping reconciliation of task %s: agents have not re-registered yet", taskID)
		return mesos.TaskStatus{}, false
	case a != nil && a.state == agentRegistered:
		return m.masterStatus(taskID, agentID, pick(mesos.TASK_GONE), mesos.REASON_RECONCILIATION, "Reconciliation: Task is unknown to the agent"), true
	case a != nil && a.state == agentUnreachable:
		return m.masterStatus(taskID, agentID, pick(mesos.TASK_UNREACHABLE), mesos.REASON_RECONCILIATION, "Reconciliation: Task is unreachable"), true
	case a != nil && a.state == agentGone:
		return m.masterStatus(taskID, agentID, pick(mesos.TASK_GONE_BY_OPERATOR), mesos.REASON_RECONCILIATION, "Reconciliation: Task is gone"), true
	}
	return m.masterStatus(taskID, agentID, pick(mesos.TASK_UNKNOWN), mesos.REASON_RECONCILIATION, "Reconciliation: Task is unknown"), true
}

func (m *Master) anyRecoveringLocked() bool {
	for _, a := range m.agents {
		if a.state == agentRecovering {
			return true
		}
	}
	return false
}

// killCallLocked handles KILL. Unknown tasks are answered as by explicit
// reconciliation (Master::kill: "Cannot kill task ... because it is
// unknown; performing reconciliation"); a task on an unreachable agent is
// unknown too, so the kill is not remembered. Killing one task of a task
// group kills the whole group.
func (m *Master) killCallLocked(fw *framework, k *scheduler.Call_Kill) {
	t := m.tasks[taskKey{fw.id, k.TaskID.Value}]
	if t == nil || !m.knownLocked(t) {
		if st, ok := m.unknownTaskStatus(fw, k.TaskID.Value, k.GetAgentID().GetValue()); ok {
			m.sendLocked(fw, updateEvent(st))
		}
		return
	}
	grace := m.cfg.KillGracePeriod
	if gp := t.info.GetKillPolicy().GetGracePeriod(); gp != nil {
		grace = time.Duration(gp.Nanoseconds)
	}
	if gp := k.GetKillPolicy().GetGracePeriod(); gp != nil {
		grace = time.Duration(gp.Nanoseconds)
	}
	if t.group != nil {
		for _, gt := range t.group.tasks {
			m.killTaskLocked(gt, grace)
		}
		return
	}
	m.killTaskLocked(t, grace)
}
