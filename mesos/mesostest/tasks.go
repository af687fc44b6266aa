package mesostest

import (
	"bytes"
	"fmt"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

type taskKey struct{ fw, task string }

// task is a launched task and its status update stream.
type task struct {
	fwID, id, agentID string
	info              mesos.TaskInfo
	res               scalars
	group             *taskGroup
	executorID        string
	sandbox           string

	state    mesos.TaskState // latest state
	terminal bool
	freed    bool // resources returned to the agent

	// pending is the agent's status update stream for the task: only the
	// head is delivered (and retried) until it is acknowledged.
	pending    []mesos.TaskStatus
	lastSent   time.Time
	retryDelay time.Duration

	// Process state, guarded by Master.mu.
	pid           int
	running       bool
	exitStatus    string
	killRequested bool // by the framework: terminal state is TASK_KILLED
	termRequested bool // SIGTERM now, SIGKILL after grace
	killNow       bool // SIGKILL now
	grace         time.Duration
	wake          chan struct{} // capacity 1: kill flags changed

	lost     bool // agent lost: no further updates
	orphaned bool // framework removed: no further updates
}

func (t *task) key() taskKey { return taskKey{t.fwID, t.id} }

// taskGroup is a LAUNCH_GROUP: tasks sharing a (simulated) default
// executor whose resources are held until every task is terminal.
type taskGroup struct {
	executorID string
	agentID    string
	execRes    scalars
	tasks      []*task
	freed      bool
}

// acceptLocked handles ACCEPT following Master::accept/_accept:
//
//   - The offers must exist, belong to the framework and be on one agent.
//     Otherwise every task in LAUNCH/LAUNCH_GROUP operations gets TASK_LOST
//     (TASK_DROPPED for PARTITION_AWARE frameworks) with
//     REASON_INVALID_OFFERS, as documented in task-state-reasons.md; the
//     valid offers in the call are consumed.
//   - Operations are applied in order against the offered resources.
//     A task that fails validation, including asking for more resources
//     than remain, gets TASK_ERROR with REASON_TASK_INVALID (a task group:
//     REASON_TASK_GROUP_INVALID), others are launched.
//   - Unused resources are refused to the framework for
//     accept.filters.refuse_seconds (default 5s).
//
// Master-generated updates carry no uuid and must not be acknowledged.
func (m *Master) acceptLocked(fw *framework, acc *scheduler.Call_Accept) {
	now := time.Now()
	var (
		agentID  string
		firstID  string
		offered  = scalars{}
		errMsg   string
		consumed []*offer
		seen     = map[string]bool{}
	)
	if len(acc.OfferIDs) == 0 {
		errMsg = "No offers specified"
	}
	for _, oid := range acc.OfferIDs {
		if errMsg != "" {
			break
		}
		o := m.offers[oid.Value]
		switch {
		case seen[oid.Value]:
			errMsg = fmt.Sprintf("Duplicate offer %s in ACCEPT", oid.Value)
		case o == nil:
			errMsg = fmt.Sprintf("Offer %s is no longer valid", oid.Value)
		case o.fwID != fw.id:
			errMsg = fmt.Sprintf("Offer %s has invalid framework %s while framework %s is expected", oid.Value, o.fwID, fw.id)
		case agentID != "" && o.agentID != agentID:
			errMsg = fmt.Sprintf("Aggregated offers must belong to one single agent. Offer %s uses agent %s and offer %s uses agent %s",
				oid.Value, o.agentID, firstID, agentID)
		default:
			if agentID == "" {
				agentID, firstID = o.agentID, oid.Value
			}
			offered.add(o.res)
			consumed = append(consumed, o)
		}
		seen[oid.Value] = true
	}
	for _, o := range consumed {
		delete(m.offers, o.id)
	}
	defer m.kickAllocation()

	if errMsg != "" {
		m.logf("mesostest: ACCEPT from framework %s used invalid offers: %s", fw.id, errMsg)
		state := mesos.TASK_LOST
		if fw.partitionAware {
			state = mesos.TASK_DROPPED
		}
		for _, op := range acc.Operations {
			for _, ti := range operationTasks(op) {
				m.sendLocked(fw, updateEvent(m.masterStatus(ti.TaskID.Value, ti.AgentID.Value, state,
					mesos.REASON_INVALID_OFFERS, "Task launched with invalid offers: "+errMsg)))
			}
		}
		return
	}

	a := m.agents[agentID]
	remaining := offered.clone()
	launched := map[string]bool{}
	for i := range acc.Operations {
		op := &acc.Operations[i]
		switch op.Type {
		case mesos.Offer_Operation_LAUNCH:
			if op.Launch == nil {
				continue
			}
			for j := range op.Launch.TaskInfos {
				ti := op.Launch.TaskInfos[j]
				res, msg := m.validateTaskLocked(fw, a, &ti, launched, false)
				if msg == "" && !remaining.contains(res) {
					msg = fmt.Sprintf("Total resources %s required by task and its executor is more than available %s", res, remaining)
				}
				if msg != "" {
					m.sendLocked(fw, updateEvent(m.masterStatus(ti.TaskID.Value, ti.AgentID.Value,
						mesos.TASK_ERROR, mesos.REASON_TASK_INVALID, msg)))
					continue
				}
				remaining.sub(res)
				launched[ti.TaskID.Value] = true
				m.launchTaskLocked(fw, a, ti, res, nil)
			}
		case mesos.Offer_Operation_LAUNCH_GROUP:
			if op.LaunchGroup == nil {
				continue
			}
			m.launchGroupLocked(fw, a, op.LaunchGroup, remaining, launched)
		default:
			m.logf("mesostest: ignoring unsupported offer operation %s from framework %s", op.Type, fw.id)
		}
	}
	fw.addFilter(agentID, remaining, refuseDuration(acc.Filters), now)
}

func operationTasks(op mesos.Offer_Operation) []mesos.TaskInfo {
	switch op.Type {
	case mesos.Offer_Operation_LAUNCH:
		if op.Launch != nil {
			return op.Launch.TaskInfos
		}
	case mesos.Offer_Operation_LAUNCH_GROUP:
		if op.LaunchGroup != nil {
			return op.LaunchGroup.TaskGroup.Tasks
		}
	}
	return nil
}

// validateTaskLocked checks a TaskInfo the way validation::task does
// (ID, uniqueness, agent, command/executor, resources). It returns the
// task's resources or a non-empty error message.
func (m *Master) validateTaskLocked(fw *framework, a *agent, ti *mesos.TaskInfo, launched map[string]bool, inGroup bool) (scalars, string) {
	id := ti.TaskID.Value
	if err := validateID(id); err != nil {
		return nil, "Task ID is invalid: " + err.Error()
	}
	if launched[id] || m.tasks[taskKey{fw.id, id}] != nil {
		return nil, "Task has duplicate ID: " + id
	}
	if ti.AgentID.Value != a.spec.ID {
		return nil, fmt.Sprintf("Task uses invalid agent: %s", ti.AgentID.Value)
	}
	if inGroup {
		if ti.Executor != nil {
			return nil, "'TaskInfo.executor' must not be set"
		}
	} else if (ti.Executor == nil) == (ti.Command == nil) {
		return nil, "Task should have at least one (but not both) of CommandInfo or ExecutorInfo present"
	}
	if ti.Executor != nil {
		return nil, "mesostest: custom executors (TaskInfo.executor) are not supported; use TaskInfo.command"
	}
	if ti.Command == nil {
		return nil, "mesostest: task in a task group must have TaskInfo.command"
	}
	if !ti.Command.GetShell() && ti.Command.GetValue() == "" {
		return nil, "Command value must be set when 'shell' is false"
	}
	res, err := scalarsFromMesos(ti.Resources)
	if err != nil {
		return nil, "Invalid resources: " + err.Error()
	}
	if res.isEmpty() {
		return nil, "Task uses no resources"
	}
	return res, ""
}

// launchGroupLocked validates and launches a LAUNCH_GROUP operation: all
// tasks or none.
func (m *Master) launchGroupLocked(fw *framework, a *agent, lg *mesos.Offer_Operation_LaunchGroup, remaining scalars, launched map[string]bool) {
	tasks := lg.TaskGroup.Tasks
	fail := func(msg string) {
		for _, ti := range tasks {
			m.sendLocked(fw, updateEvent(m.masterStatus(ti.TaskID.Value, ti.AgentID.Value,
				mesos.TASK_ERROR, mesos.REASON_TASK_GROUP_INVALID, msg)))
		}
	}
	if len(tasks) == 0 {
		return
	}
	if lg.Executor.Type != mesos.ExecutorInfo_DEFAULT {
		fail("'ExecutorInfo.type' must be 'DEFAULT' for a task group")
		return
	}
	if err := validateID(lg.Executor.ExecutorID.Value); err != nil {
		fail("Executor ID is invalid: " + err.Error())
		return
	}
	execRes, err := scalarsFromMesos(lg.Executor.Resources)
	if err != nil {
		fail("Invalid executor resources: " + err.Error())
		return
	}
	total := execRes.clone()
	resByTask := make([]scalars, len(tasks))
	groupIDs := map[string]bool{}
	for id := range launched {
		groupIDs[id] = true
	}
	for i := range tasks {
		res, msg := m.validateTaskLocked(fw, a, &tasks[i], groupIDs, true)
		if msg != "" {
			fail(fmt.Sprintf("Task '%s' is invalid: %s", tasks[i].TaskID.Value, msg))
			return
		}
		groupIDs[tasks[i].TaskID.Value] = true
		resByTask[i] = res
		total.add(res)
	}
	if !remaining.contains(total) {
		fail(fmt.Sprintf("Total resources %s required by task group and its executor is more than available %s", total, remaining))
		return
	}
	remaining.sub(total)
	g := &taskGroup{executorID: lg.Executor.ExecutorID.Value, agentID: a.spec.ID, execRes: execRes}
	for i := range tasks {
		launched[tasks[i].TaskID.Value] = true
		g.tasks = append(g.tasks, m.launchTaskLocked(fw, a, tasks[i], resByTask[i], g))
	}
}

// launchTaskLocked records a TASK_STAGING task and starts its launcher.
func (m *Master) launchTaskLocked(fw *framework, a *agent, ti mesos.TaskInfo, res scalars, g *taskGroup) *task {
	m.nextRun++
	t := &task{
		fwID:       fw.id,
		id:         ti.TaskID.Value,
		agentID:    a.spec.ID,
		info:       ti,
		res:        res,
		group:      g,
		executorID: ti.TaskID.Value, // the command executor uses the task ID
		state:      mesos.TASK_STAGING,
		wake:       make(chan struct{}, 1),
	}
	if g != nil {
		t.executorID = g.executorID
	}
	t.sandbox = m.sandboxDir(t, m.nextRun)
	m.tasks[t.key()] = t
	m.allTasks = append(m.allTasks, t)
	m.logf("mesostest: launching task %s of framework %s on agent %s", t.id, fw.id, a.spec.ID)
	m.wg.Add(1)
	go m.runTask(t)
	return t
}

// groupsOnAgentLocked returns the task groups on an agent still holding
// executor resources.
func (m *Master) groupsOnAgentLocked(agentID string) []*taskGroup {
	var out []*taskGroup
	seen := map[*taskGroup]bool{}
	for _, t := range m.allTasks {
		if g := t.group; g != nil && !g.freed && g.agentID == agentID && !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	return out
}

// masterStatus builds a status generated by the master: SOURCE_MASTER and
// no uuid, so it is neither retried nor to be acknowledged.
func (m *Master) masterStatus(taskID, agentID string, state mesos.TaskState, reason mesos.TaskStatus_Reason, msg string) mesos.TaskStatus {
	st := mesos.TaskStatus{
		TaskID:    mesos.TaskID{Value: taskID},
		State:     state.Enum(),
		Source:    mesos.SOURCE_MASTER.Enum(),
		Reason:    reason.Enum(),
		Message:   &msg,
		Timestamp: timestamp(),
	}
	if agentID != "" {
		st.AgentID = &mesos.AgentID{Value: agentID}
	}
	return st
}

func timestamp() *float64 {
	ts := float64(time.Now().UnixNano()) / 1e9
	return &ts
}

func updateEvent(st mesos.TaskStatus) *scheduler.Event {
	return &scheduler.Event{Type: scheduler.Event_UPDATE, Update: &scheduler.Event_Update{Status: st}}
}

func isTerminal(s mesos.TaskState) bool {
	switch s {
	case mesos.TASK_FINISHED, mesos.TASK_FAILED, mesos.TASK_KILLED, mesos.TASK_ERROR,
		mesos.TASK_LOST, mesos.TASK_DROPPED, mesos.TASK_GONE, mesos.TASK_GONE_BY_OPERATOR,
		mesos.TASK_UNREACHABLE:
		// TASK_UNREACHABLE is not terminal in Mesos (the agent may come
		// back), but agents lost in the test master never do.
		return true
	}
	return false
}

// setTerminalLocked records a terminal state and releases the task's
// resources (Mesos releases them when the terminal update reaches the
// master, before it is acknowledged).
func (m *Master) setTerminalLocked(t *task, state mesos.TaskState) {
	t.state = state
	if t.terminal {
		return
	}
	t.terminal = true
	if !t.freed {
		t.freed = true
		m.kickAllocation()
	}
	if g := t.group; g != nil && !g.freed {
		done := true
		for _, gt := range g.tasks {
			if !gt.terminal {
				done = false
			}
		}
		if done {
			g.freed = true
		}
	}
}

// agentUpdateLocked generates a status update on the task's agent: it gets
// a uuid, is queued on the task's status update stream and delivered
// reliably (resent until acknowledged, one at a time, in order).
func (m *Master) agentUpdateLocked(t *task, state mesos.TaskState, source mesos.TaskStatus_Source, reason *mesos.TaskStatus_Reason, msg string) {
	st := mesos.TaskStatus{
		TaskID:     mesos.TaskID{Value: t.id},
		State:      state.Enum(),
		Source:     source.Enum(),
		Reason:     reason,
		AgentID:    &mesos.AgentID{Value: t.agentID},
		ExecutorID: &mesos.ExecutorID{Value: t.executorID},
		Timestamp:  timestamp(),
		UUID:       newUUID(),
	}
	if msg != "" {
		st.Message = &msg
	}
	if isTerminal(state) {
		m.setTerminalLocked(t, state)
	} else {
		t.state = state
	}
	if t.lost || t.orphaned {
		return
	}
	t.pending = append(t.pending, st)
	if len(t.pending) == 1 {
		t.retryDelay = m.cfg.StatusUpdateRetryInterval
		m.deliverHeadLocked(t, time.Now())
	}
}

// deliverHeadLocked sends the head of t's status update stream if the
// framework is connected.
func (m *Master) deliverHeadLocked(t *task, now time.Time) {
	if len(t.pending) == 0 {
		return
	}
	fw := m.frameworks[t.fwID]
	if fw == nil || fw.stream == nil {
		return
	}
	m.sendLocked(fw, updateEvent(t.pending[0]))
	t.lastSent = now
}

// retryStatusUpdatesLocked resends unacknowledged updates whose retry
// delay elapsed, doubling the delay each time (the agent's exponential
// backoff between STATUS_UPDATE_RETRY_INTERVAL_MIN and _MAX).
func (m *Master) retryStatusUpdatesLocked(now time.Time) bool {
	changed := false
	for _, t := range m.activeTasksLocked() {
		if len(t.pending) == 0 || t.lastSent.IsZero() || now.Sub(t.lastSent) < t.retryDelay {
			continue
		}
		fw := m.frameworks[t.fwID]
		if fw == nil || fw.stream == nil {
			continue
		}
		m.logf("mesostest: resending unacknowledged %s update for task %s", t.pending[0].GetState(), t.id)
		m.deliverHeadLocked(t, now)
		t.retryDelay *= 2
		if t.retryDelay > m.cfg.StatusUpdateMaxRetryInterval {
			t.retryDelay = m.cfg.StatusUpdateMaxRetryInterval
		}
		changed = true
	}
	return changed
}

// resendPendingUpdatesLocked delivers the pending head update of each of
// fw's tasks right after it (re-)subscribed.
func (m *Master) resendPendingUpdatesLocked(fw *framework) {
	now := time.Now()
	for _, t := range m.activeTasksLocked() {
		if t.fwID == fw.id && len(t.pending) > 0 {
			t.retryDelay = m.cfg.StatusUpdateRetryInterval
			m.deliverHeadLocked(t, now)
		}
	}
}

// acknowledgeLocked handles ACKNOWLEDGE: if the uuid is the one of the
// update at the head of the task's stream, that update is done and the
// next one (if any) is delivered; once the terminal update is
// acknowledged the master forgets the task. Acknowledgements that match
// nothing are ignored (the call still gets 202).
func (m *Master) acknowledgeLocked(fw *framework, ack *scheduler.Call_Acknowledge) {
	t := m.tasks[taskKey{fw.id, ack.TaskID.Value}]
	if t == nil || t.agentID != ack.AgentID.Value || len(t.pending) == 0 || !bytes.Equal(t.pending[0].UUID, ack.UUID) {
		m.logf("mesostest: ignoring unexpected acknowledgement for task %s of framework %s", ack.TaskID.Value, fw.id)
		return
	}
	t.pending = t.pending[1:]
	if len(t.pending) > 0 {
		t.retryDelay = m.cfg.StatusUpdateRetryInterval
		m.deliverHeadLocked(t, time.Now())
		return
	}
	t.lastSent = time.Time{}
	if t.terminal {
		delete(m.tasks, t.key())
	}
}

// reconcileLocked handles RECONCILE (reconciliation.md). Implicit (empty
// list): the latest state of every task the master knows for the
// framework (non-terminal, or terminal with unacknowledged updates).
// Explicit: the latest state of each listed known task; for unknown tasks
// TASK_LOST, or for PARTITION_AWARE frameworks TASK_GONE (agent known),
// TASK_UNREACHABLE (agent lost) or TASK_UNKNOWN (agent unknown), as
// Master::_reconcileTasks does. All with REASON_RECONCILIATION and no uuid.
func (m *Master) reconcileLocked(fw *framework, list []scheduler.Call_Reconcile_Task) {
	if len(list) == 0 {
		for _, t := range m.activeTasksLocked() {
			if t.fwID == fw.id {
				m.sendLocked(fw, updateEvent(m.reconcileStatus(t)))
			}
		}
		return
	}
	for _, rt := range list {
		if t := m.tasks[taskKey{fw.id, rt.TaskID.Value}]; t != nil {
			m.sendLocked(fw, updateEvent(m.reconcileStatus(t)))
			continue
		}
		m.sendLocked(fw, updateEvent(m.unknownTaskStatus(fw, rt.TaskID.Value, rt.AgentID)))
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

func (m *Master) unknownTaskStatus(fw *framework, taskID string, agentID *mesos.AgentID) mesos.TaskStatus {
	aid := agentID.GetValue()
	if aid == "" {
		// Tasks of lost agents are remembered as unreachable.
		for i := len(m.allTasks) - 1; i >= 0; i-- {
			if t := m.allTasks[i]; t.fwID == fw.id && t.id == taskID && t.lost {
				aid = t.agentID
				break
			}
		}
	}
	a := m.agents[aid]
	switch {
	case a != nil && !a.lost:
		state := mesos.TASK_LOST
		if fw.partitionAware {
			state = mesos.TASK_GONE
		}
		return m.masterStatus(taskID, aid, state, mesos.REASON_RECONCILIATION, "Reconciliation: Task is unknown to the agent")
	case a != nil && a.lost:
		state := mesos.TASK_LOST
		if fw.partitionAware {
			state = mesos.TASK_UNREACHABLE
		}
		return m.masterStatus(taskID, aid, state, mesos.REASON_RECONCILIATION, "Reconciliation: Task is unreachable")
	default:
		state := mesos.TASK_LOST
		if fw.partitionAware {
			state = mesos.TASK_UNKNOWN
		}
		return m.masterStatus(taskID, aid, state, mesos.REASON_RECONCILIATION, "Reconciliation: Task is unknown")
	}
}

// killCallLocked handles KILL. Unknown tasks are answered as by explicit
// reconciliation (scheduler-http-api.md: "If the task is unknown to the
// master, a TASK_LOST will be generated"). Killing one task of a task
// group kills the whole group.
func (m *Master) killCallLocked(fw *framework, k *scheduler.Call_Kill) {
	t := m.tasks[taskKey{fw.id, k.TaskID.Value}]
	if t == nil {
		m.sendLocked(fw, updateEvent(m.unknownTaskStatus(fw, k.TaskID.Value, k.AgentID)))
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

// killTaskLocked asks the task's process to terminate (SIGTERM, then
// SIGKILL after grace); the task ends TASK_KILLED. A task not started yet
// is killed before launch. A second kill with a zero grace period kills
// at once.
func (m *Master) killTaskLocked(t *task, grace time.Duration) {
	if t.terminal {
		return
	}
	if grace < 0 {
		grace = 0
	}
	if t.killRequested {
		if grace == 0 {
			t.killNow = true
			wakeTask(t)
		}
		return
	}
	t.killRequested = true
	t.termRequested = true
	t.grace = grace
	if t.running {
		if fw := m.frameworks[t.fwID]; fw != nil && fw.killingState {
			m.agentUpdateLocked(t, mesos.TASK_KILLING, mesos.SOURCE_EXECUTOR, nil, "")
		}
	}
	wakeTask(t)
}

// forceKillLocked SIGKILLs the task's process group without making it a
// framework kill (used for crashes, agent loss and framework removal).
func (m *Master) forceKillLocked(t *task, why string) {
	m.logf("mesostest: killing process of task %s (%s)", t.id, why)
	t.killNow = true
	wakeTask(t)
}

func wakeTask(t *task) {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

func (m *Master) activeTasksLocked() []*task {
	out := make([]*task, 0, len(m.tasks))
	for _, t := range m.allTasks {
		if m.tasks[t.key()] == t {
			out = append(out, t)
		}
	}
	return out
}

// KillTaskProcess kills the process of the running task with the given ID
// with SIGKILL, simulating a crash: the task ends TASK_FAILED ("Command
// terminated with signal Killed"). If several frameworks have a task with
// this ID, the first launched one is killed.
func (m *Master) KillTaskProcess(taskID string) error {
	m.mu.Lock()
	defer m.unlock()
	if m.closed {
		return ErrClosed
	}
	for _, t := range m.activeTasksLocked() {
		if t.id == taskID && t.running {
			m.forceKillLocked(t, "KillTaskProcess")
			return nil
		}
	}
	return fmt.Errorf("mesostest: killing process of task %s: no running process", taskID)
}

// Task is a snapshot of a launched task.
type Task struct {
	// ID, Name, FrameworkID and AgentID of the task.
	ID, Name, FrameworkID, AgentID string
	// State is the latest state of the task.
	State mesos.TaskState
	// Active reports whether the master still tracks the task: it is not
	// terminal, or its terminal update is not acknowledged yet.
	Active bool
	// PendingUpdates counts status updates not yet acknowledged.
	PendingUpdates int
	// PID is the process ID (0 if the process never started).
	PID int
	// ProcessRunning reports whether the process is alive.
	ProcessRunning bool
	// ExitStatus describes how the process ended, e.g. "Command exited
	// with status 1" (empty while running).
	ExitStatus string
	// Sandbox is the task's sandbox directory (holds stdout, stderr and
	// fetched URIs; removed by Close).
	Sandbox string
}

func (m *Master) tasksLocked() []Task {
	out := make([]Task, 0, len(m.allTasks))
	for _, t := range m.allTasks {
		out = append(out, Task{
			ID:             t.id,
			Name:           t.info.Name,
			FrameworkID:    t.fwID,
			AgentID:        t.agentID,
			State:          t.state,
			Active:         m.tasks[t.key()] == t,
			PendingUpdates: len(t.pending),
			PID:            t.pid,
			ProcessRunning: t.running,
			ExitStatus:     t.exitStatus,
			Sandbox:        t.sandbox,
		})
	}
	return out
}

// Tasks returns a snapshot of every task ever launched, in launch order.
func (m *Master) Tasks() []Task {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tasksLocked()
}

// RunningProcesses returns the number of live task processes.
func (m *Master) RunningProcesses() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.procs
}
