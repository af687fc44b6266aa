package mesos

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

// Task state: status updates, what a task's end means for its slot
// (relaunch after backoff, count a failure, fail the pool), and killing
// tasks that are no longer wanted.

// newTask records a task about to be launched for slot k on offer o.
func (m *machine) newTask(now time.Time, k slotKey, o mesos.Offer) *task {
	t := &task{
		id: m.newTaskID(k.pool, k.index), key: k,
		agentID: o.AgentID.Value, hostname: o.Hostname,
		state: mesos.TASK_STAGING, launched: now, updated: now,
		confirmed: true, asked: now,
	}
	m.tasks[t.id] = t
	return t
}

// update handles a status update. Updates with a uuid are acknowledged
// (after the driver persisted what they changed).
func (m *machine) update(now time.Time, st mesos.TaskStatus) output {
	var out output
	id := st.TaskID.Value
	state := st.GetState()
	if len(st.UUID) > 0 {
		out.acks = append(out.acks, ackOp{agentID: st.GetAgentID().GetValue(), taskID: id, uuid: st.UUID})
	}
	t := m.tasks[id]
	if t == nil {
		// A task the scheduler does not know is adopted when the master
		// knows it. TASK_UNREACHABLE says only that the agent named in
		// the question is: no proof that the task exists (it may be a
		// launch that was dropped, whose answer crossed the question).
		if !isTerminal(state) && state != mesos.TASK_UNREACHABLE {
			m.adopt(now, st)
		}
		m.finish(now, &out)
		return out
	}
	if m.settling(now, t, st) {
		// Not believed yet; asked again after the reconciliation backoff.
		m.finish(now, &out)
		return out
	}
	t.confirmed, t.asks = true, 0
	if a := st.GetAgentID().GetValue(); a != "" {
		t.agentID = a
	}
	if isTerminal(state) {
		m.ended(now, t, state, reasonName(st), st.GetMessage())
		m.finish(now, &out)
		return out
	}
	m.reachability(now, t, state, &out)
	reconciled := st.GetReason() == mesos.REASON_RECONCILIATION
	if !t.reported && (!reconciled || state != mesos.TASK_STAGING) {
		t.reported = true
		if s := m.slots[t.key]; s != nil {
			s.notLaunched = 0
		}
	}
	if state != t.state {
		t.state, t.updated = state, now
		m.dirty = true
	}
	if state == mesos.TASK_RUNNING && t.runningSince.IsZero() {
		t.runningSince = now
	}
	if t.reported && state != mesos.TASK_STAGING && state != mesos.TASK_UNREACHABLE {
		m.volumeStarted(t)
	}
	if msg := st.GetMessage(); msg != "" && !reconciled {
		t.message = msg
	}
	m.finish(now, &out)
	return out
}

// adopt takes over a live task the scheduler did not know (found by
// reconciliation). If its slot is not wanted, or already has a task,
// killExtras kills it.
func (m *machine) adopt(now time.Time, st mesos.TaskStatus) {
	id := st.TaskID.Value
	k, ok := parseTaskID(id)
	t := &task{id: id, key: k, agentID: st.GetAgentID().GetValue(), state: st.GetState(),
		launched: now, updated: now, confirmed: true, reported: true}
	if st.GetState() == mesos.TASK_RUNNING {
		t.runningSince = now
	}
	t.hostname = m.agents[t.agentID]
	if !ok {
		t.key = slotKey{pool: "?", index: -1}
	}
	// killExtras kills it if its slot is not wanted or taken.
	m.tasks[id] = t
	m.dirty = true
}

// liveTask returns a live task of slot k that is not being killed.
func (m *machine) liveTask(k slotKey) *task {
	for _, t := range m.tasks {
		if t.key == k && !t.terminal() && !t.kill {
			return t
		}
	}
	return nil
}

// endKind classifies the end of a task.
type endKind int

const (
	// endWanted: the scheduler killed it (or its slot is no longer
	// wanted): nothing to do.
	endWanted endKind = iota
	// endNotLaunched: the launch never happened (invalid or rescinded
	// offer, or the master never heard of the task): relaunch soon, not a
	// failure.
	endNotLaunched
	// endInterrupted: killed or removed by someone else, or its agent is
	// gone (TASK_GONE, TASK_GONE_BY_OPERATOR, TASK_UNKNOWN): relaunch
	// after the minimum backoff, not a failure.
	endInterrupted
	// endFailed: the task failed, was lost or is gone: relaunch after
	// backoff, counting towards Retries.
	endFailed
)

func (m *machine) classify(t *task, state mesos.TaskState, reason string) endKind {
	switch {
	case t.kill || !m.desired(t.key):
		return endWanted
	case state == mesos.TASK_DROPPED,
		reason == mesos.REASON_INVALID_OFFERS.String(),
		reason == mesos.REASON_RECONCILIATION.String() && !t.reported:
		return endNotLaunched
	case state == mesos.TASK_KILLED, state == mesos.TASK_GONE_BY_OPERATOR,
		state == mesos.TASK_GONE, state == mesos.TASK_UNKNOWN,
		reason == mesos.REASON_FRAMEWORK_REMOVED.String():
		// Killed by someone else, or its agent is gone: not the node's
		// fault.
		return endInterrupted
	}
	return endFailed
}

// ended handles the end of task t: the slot is relaunched after a backoff
// unless the task was killed on purpose; a failure counts towards the
// pool's Retries, and exceeding them fails the pool.
func (m *machine) ended(now time.Time, t *task, state mesos.TaskState, reason, msg string) {
	t.state, t.reason, t.updated, t.ended = state, reason, now, now
	if msg != "" {
		t.message = msg
	}
	delete(m.tasks, t.id)
	m.dirty = true
	if t.key.index < 0 {
		return
	}
	s := m.slot(t.key, now)
	if lt := m.liveTask(t.key); lt == nil {
		s.pendingSince = now
	}
	kind := m.classify(t, state, reason)
	m.volumeEnded(t, state, kind)
	s.last = t
	why := describeEnd(state, reason, t.message)
	switch kind {
	case endWanted:
		if !m.desired(t.key) {
			m.forgetSlot(t.key)
		}
		return
	case endNotLaunched:
		// Relaunch at once the first time (e.g. an offer rescinded just
		// as it was used), with backoff if it keeps happening (e.g.
		// every ACCEPT is refused). Not a failure of the task.
		s.notLaunched++
		s.lastReason = why
		if s.notLaunched > 1 {
			s.nextLaunch = now.Add(m.backoff(s.notLaunched - 1))
		}
		return
	case endInterrupted:
		s.restarts++
		s.lastReason = why
		s.nextLaunch = now.Add(m.cfg.relaunchMin)
		return
	}
	if !t.runningSince.IsZero() && now.Sub(t.runningSince) >= m.cfg.backoffReset {
		s.failures = 0
	}
	s.failures++
	s.restarts++
	s.lastReason = why
	ps := m.pools[t.key.pool]
	if s.failures > ps.spec.Retries {
		if !ps.failed {
			ps.failed = true
			ps.failedAt = now
			ps.failedReason = fmt.Sprintf("instance %d failed %d time(s) in a row (retries: %d); last: %s",
				t.key.index, s.failures, ps.spec.Retries, why)
			m.problem(now, mesosstatus.ProblemDeployment, "pool "+t.key.pool+" failed: "+ps.failedReason)
		}
		return
	}
	s.nextLaunch = now.Add(m.backoff(s.failures))
}

// backoff returns the relaunch delay after n consecutive failures:
// RelaunchBackoffMin doubling per failure, at most RelaunchBackoffMax.
func (m *machine) backoff(n int) time.Duration {
	return backoff.Nth(n, m.cfg.relaunchMin, m.cfg.relaunchMax)
}

func describeEnd(state mesos.TaskState, reason, msg string) string {
	s := state.String()
	if reason != "" {
		s += " (" + reason + ")"
	}
	if msg != "" {
		s += ": " + msg
	}
	return s
}

func reasonName(st mesos.TaskStatus) string {
	if st.Reason == nil {
		return ""
	}
	return st.Reason.String()
}

// pendingSlots returns the slots to launch now, in pool order: wanted, no
// live task, no active node in the cluster, pool not failed, backoff over,
// and subscribed.
func (m *machine) pendingSlots(now time.Time) []slotKey {
	if !m.subscribed || !m.membersKnown {
		return nil
	}
	busy := map[slotKey]bool{}
	for _, t := range m.tasks {
		if !t.terminal() && !t.kill {
			busy[t.key] = true
		}
	}
	var out []slotKey
	for _, name := range m.order {
		ps := m.pools[name]
		if ps.failed {
			continue
		}
		for i := 0; i < ps.spec.Instances; i++ {
			k := slotKey{name, i}
			if busy[k] {
				continue
			}
			if s := m.slots[k]; s != nil && now.Before(s.nextLaunch) {
				continue
			}
			if len(m.activeNodes[k]) > 0 {
				continue
			}
			out = append(out, k)
		}
	}
	return out
}

// killExtras marks for killing every live task that is not wanted: its
// slot is gone, or another task of its slot is kept. A slot with a task
// whose existence is unconfirmed is left alone until reconciliation
// answers, so that the one task that really runs is never killed for a
// ghost.
func (m *machine) killExtras(now time.Time, out *output) {
	if !m.known {
		return
	}
	bySlot := map[slotKey][]*task{}
	for _, t := range m.tasks {
		if !t.terminal() {
			bySlot[t.key] = append(bySlot[t.key], t)
		}
	}
	for k, ts := range bySlot {
		if !m.desired(k) {
			for _, t := range ts {
				m.kill(now, t, out)
			}
			continue
		}
		if len(ts) < 2 || slices.ContainsFunc(ts, func(t *task) bool { return !t.confirmed }) {
			continue
		}
		// Keep the one that runs longest (then the oldest launch).
		slices.SortFunc(ts, func(a, b *task) int {
			if a.kill != b.kill {
				if a.kill {
					return 1
				}
				return -1
			}
			if ar, br := a.state == mesos.TASK_RUNNING, b.state == mesos.TASK_RUNNING; ar != br {
				if ar {
					return -1
				}
				return 1
			}
			return cmp.Or(a.launched.Compare(b.launched), cmp.Compare(a.id, b.id))
		})
		for _, t := range ts[1:] {
			m.kill(now, t, out)
		}
	}
}

// kill asks the master to kill t, once (tick repeats unanswered kills).
func (m *machine) kill(now time.Time, t *task, out *output) {
	if t.kill && !t.killSent.IsZero() {
		return
	}
	if !t.kill {
		t.kill = true
		m.dirty = true
	}
	if !m.subscribed {
		return
	}
	t.killSent = now
	out.kills = append(out.kills, killOp{taskID: t.id, agentID: t.agentID})
}
