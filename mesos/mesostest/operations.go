package mesostest

import (
	"fmt"
	"os"
	"path"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// acceptLocked handles ACCEPT following Master::accept and _accept:
//
//   - The offers must exist, belong to the framework and be on one agent.
//     Otherwise every task in LAUNCH/LAUNCH_GROUP operations gets TASK_LOST
//     (TASK_DROPPED for PARTITION_AWARE frameworks) with
//     REASON_INVALID_OFFERS, as documented in task-state-reasons.md; the
//     valid offers in the call are consumed.
//   - The offers are consumed at once; the operations are applied after
//     the accept delay (SetAcceptDelay: Mesos authorizes them
//     asynchronously, so a RECONCILE sent right after an ACCEPT can be
//     answered before the task exists).
//   - Resources without allocation_info get the offer's, as
//     protobuf::injectAllocationInfo does; resources allocated to another
//     role are not part of the offer.
//   - Operations are applied in order against the offered resources:
//     RESERVE, UNRESERVE, CREATE and DESTROY change them (and the agent's
//     checkpointed resources); an invalid one is dropped (there is no
//     operation feedback here). A task that fails validation, including
//     asking for resources that are not left (after the preceding
//     operations and tasks), gets TASK_ERROR with REASON_TASK_INVALID (a
//     task group: REASON_TASK_GROUP_INVALID); others are launched.
//   - Unused resources are refused to the framework for
//     accept.filters.refuse_seconds (default 5s).
//
// Master-generated updates carry no uuid and must not be acknowledged.
func (m *Master) acceptLocked(fw *framework, acc *scheduler.Call_Accept) {
	var (
		agentID  string
		firstID  string
		offered  resources
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
		m.dropLaunchesLocked(fw, acc.Operations, mesos.REASON_INVALID_OFFERS, "Task launched with invalid offers: "+errMsg)
		return
	}
	apply := func() { m.applyOperationsLocked(fw, agentID, offered, acc) }
	if m.acceptDelay <= 0 {
		apply()
		return
	}
	// The offered resources are held by the pending accept (as Mesos
	// holds them while authorizing).
	p := &pendingAccept{at: time.Now().Add(m.acceptDelay), agentID: agentID, res: offered, apply: apply}
	m.pendingAccepts = append(m.pendingAccepts, p)
}

// pendingAccept is an ACCEPT whose operations are applied later.
type pendingAccept struct {
	at      time.Time
	agentID string
	res     resources
	apply   func()
}

// applyDueAcceptsLocked applies the pending accepts that are due.
func (m *Master) applyDueAcceptsLocked(now time.Time) bool {
	changed := false
	for len(m.pendingAccepts) > 0 && !now.Before(m.pendingAccepts[0].at) {
		p := m.pendingAccepts[0]
		m.pendingAccepts = m.pendingAccepts[1:]
		p.apply()
		changed = true
	}
	return changed
}

// dropLaunchesLocked fails every task of the operations with TASK_LOST
// (TASK_DROPPED for PARTITION_AWARE frameworks).
func (m *Master) dropLaunchesLocked(fw *framework, ops []mesos.Offer_Operation, reason mesos.TaskStatus_Reason, msg string) {
	state := mesos.TASK_LOST
	if fw.partitionAware {
		state = mesos.TASK_DROPPED
	}
	for _, op := range ops {
		for _, ti := range operationTasks(op) {
			m.sendLocked(fw, updateEvent(m.masterStatus(ti.TaskID.Value, ti.AgentID.Value, state, reason, msg)))
		}
	}
}

// applyOperationsLocked applies the operations of an ACCEPT to the offered
// resources of one agent.
func (m *Master) applyOperationsLocked(fw *framework, agentID string, offered resources, acc *scheduler.Call_Accept) {
	a := m.agents[agentID]
	if a == nil || !a.connected() || fw.removed {
		m.dropLaunchesLocked(fw, acc.Operations, mesos.REASON_AGENT_REMOVED, "Agent "+agentID+" is not registered")
		return
	}
	remaining := offered.clone()
	launched := map[string]bool{}
	for i := range acc.Operations {
		op := &acc.Operations[i]
		var err error
		switch op.Type {
		case mesos.Offer_Operation_RESERVE:
			err = m.reserveLocked(fw, a, &remaining, op.GetReserve().GetResources(), true)
		case mesos.Offer_Operation_UNRESERVE:
			err = m.reserveLocked(fw, a, &remaining, op.GetUnreserve().GetResources(), false)
		case mesos.Offer_Operation_CREATE:
			err = m.createLocked(fw, a, &remaining, op.GetCreate().GetVolumes(), true)
		case mesos.Offer_Operation_DESTROY:
			err = m.createLocked(fw, a, &remaining, op.GetDestroy().GetVolumes(), false)
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
			if op.LaunchGroup != nil {
				m.launchGroupLocked(fw, a, op.LaunchGroup, &remaining, launched)
			}
		default:
			m.logf("mesostest: ignoring unsupported offer operation %s from framework %s", op.Type, fw.id)
		}
		if err != nil {
			m.logf("mesostest: dropping invalid %s operation of framework %s on agent %s: %v", op.Type, fw.id, agentID, err)
		}
	}
	fw.addFilter(agentID, remaining, refuseDuration(acc.Filters), time.Now())
}

// opResources converts the resources of an operation of fw, giving those
// without allocation_info the offer's (the framework's role) and refusing
// resources allocated to another role; with Config.StrictAllocationInfo a
// MULTI_ROLE framework must keep the allocation_info it was offered.
func (m *Master) opResources(fw *framework, rs []mesos.Resource) (resources, error) {
	for i := range rs {
		ai := rs[i].AllocationInfo
		switch {
		case ai == nil && m.cfg.StrictAllocationInfo && fw.multiRole:
			return resources{}, fmt.Errorf("resource %s has no allocation_info (mesostest StrictAllocationInfo: keep the offer's)", rs[i].Name)
		case ai != nil && ai.GetRole() != fw.role:
			return resources{}, fmt.Errorf("resource %s is allocated to role '%s' but the offer is allocated to role '%s'",
				rs[i].Name, ai.GetRole(), fw.role)
		}
	}
	return resourcesFromMesos(rs)
}

// reserveLocked applies RESERVE (reserve true) or UNRESERVE, following
// validation::operation::validate: dynamic reservations for the
// framework's role, by its principal (if it has one), of resources that
// are in the offer. Persistent volumes cannot be unreserved.
func (m *Master) reserveLocked(fw *framework, a *agent, remaining *resources, rs []mesos.Resource, reserve bool) error {
	res, err := m.opResources(fw, rs)
	if err != nil {
		return err
	}
	if res.isEmpty() {
		return fmt.Errorf("no resources")
	}
	var from, to resources
	check := func(k kind) error {
		switch {
		case !k.reserved() || k.static:
			return fmt.Errorf("resource %s: only dynamically reserved resources can be (un)reserved", k)
		case k.role != fw.role:
			return fmt.Errorf("resource %s: the framework's role is '%s'", k, fw.role)
		case reserve && fw.info.GetPrincipal() != "" && k.principal != fw.info.GetPrincipal():
			return fmt.Errorf("resource %s: reserved by principal '%s', the framework's principal is '%s'", k, k.principal, fw.info.GetPrincipal())
		case k.volume != "":
			return fmt.Errorf("resource %s: a persistent volume cannot be (un)reserved; DESTROY it first", k)
		}
		return nil
	}
	for k, v := range res.scalar {
		if err := check(k); err != nil {
			return err
		}
		from.addScalar(k.unreserved(), v)
		to.addScalar(k, v)
	}
	for k, s := range res.ranges {
		if err := check(k); err != nil {
			return err
		}
		from.addRanges(k.unreserved(), s)
		to.addRanges(k, s)
	}
	if !reserve {
		from, to = to, from
	}
	if !remaining.contains(from) {
		return fmt.Errorf("%s are not in the offered resources %s", from, remaining)
	}
	remaining.sub(from)
	remaining.add(to)
	a.total.sub(from)
	a.total.add(to)
	m.logf("mesostest: agent %s: %s -> %s", a.spec.ID, from, to)
	return nil
}

// createLocked applies CREATE (create true) or DESTROY of persistent
// volumes: disk reserved for the framework's role, with a persistence ID
// unique on the agent and a relative container path. A volume to destroy
// must be in the offer (so no task uses it). The volume's directory on the
// agent is created, or removed.
func (m *Master) createLocked(fw *framework, a *agent, remaining *resources, rs []mesos.Resource, create bool) error {
	res, err := m.opResources(fw, rs)
	if err != nil {
		return err
	}
	if len(res.ranges) > 0 || len(res.scalar) == 0 {
		return fmt.Errorf("a volume is disk")
	}
	var plain, vols resources
	for k, v := range res.scalar {
		switch {
		case k.name != "disk" || k.volume == "":
			return fmt.Errorf("resource %s is not a persistent volume", k)
		case !k.reserved():
			return fmt.Errorf("volume %s: persistent volumes need reserved disk", k.volume)
		case k.role != fw.role:
			return fmt.Errorf("volume %s: reserved for role '%s', the framework's role is '%s'", k.volume, k.role, fw.role)
		case path.IsAbs(k.path) || k.path == "" || !isLocalPath(k.path):
			return fmt.Errorf("volume %s: container path %q must be a relative path inside the sandbox", k.volume, k.path)
		}
		if create {
			for _, have := range a.total.kinds() {
				if have.volume == k.volume && have.role == k.role {
					return fmt.Errorf("volume %s: the persistence ID is used by another volume on agent %s", k.volume, a.spec.ID)
				}
			}
		}
		plain.addScalar(k.plain(), v)
		vols.addScalar(k, v)
	}
	from, to := plain, vols
	if !create {
		from, to = vols, plain
	}
	if !remaining.contains(from) {
		return fmt.Errorf("%s are not in the offered resources %s", from, remaining)
	}
	for k := range vols.scalar {
		dir := m.volumeDir(a.spec.ID, k.role, k.volume)
		if create {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("creating volume %s: %w", k.volume, err)
			}
		} else if err := removeVolumeDir(dir); err != nil {
			return err
		}
	}
	remaining.sub(from)
	remaining.add(to)
	a.total.sub(from)
	a.total.add(to)
	m.logf("mesostest: agent %s: %s -> %s", a.spec.ID, from, to)
	return nil
}

func isLocalPath(p string) bool {
	c := path.Clean(p)
	return c != "." && c != ".." && !path.IsAbs(c) && (len(c) < 3 || c[:3] != "../")
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
func (m *Master) validateTaskLocked(fw *framework, a *agent, ti *mesos.TaskInfo, launched map[string]bool, inGroup bool) (resources, string) {
	id := ti.TaskID.Value
	if err := validateID(id); err != nil {
		return resources{}, "Task ID is invalid: " + err.Error()
	}
	if launched[id] || m.tasks[taskKey{fw.id, id}] != nil {
		return resources{}, "Task has duplicate ID: " + id
	}
	if ti.AgentID.Value != a.spec.ID {
		return resources{}, fmt.Sprintf("Task uses invalid agent: %s", ti.AgentID.Value)
	}
	if inGroup {
		if ti.Executor != nil {
			return resources{}, "'TaskInfo.executor' must not be set"
		}
	} else if (ti.Executor == nil) == (ti.Command == nil) {
		return resources{}, "Task should have at least one (but not both) of CommandInfo or ExecutorInfo present"
	}
	if ti.Executor != nil {
		return resources{}, "mesostest: custom executors (TaskInfo.executor) are not supported; use TaskInfo.command"
	}
	if ti.Command == nil {
		return resources{}, "mesostest: task in a task group must have TaskInfo.command"
	}
	if !ti.Command.GetShell() && ti.Command.GetValue() == "" {
		return resources{}, "Command value must be set when 'shell' is false"
	}
	res, err := m.opResources(fw, ti.Resources)
	if err != nil {
		return resources{}, "Invalid resources: " + err.Error()
	}
	if res.isEmpty() {
		return resources{}, "Task uses no resources"
	}
	return res, ""
}

// launchGroupLocked validates and launches a LAUNCH_GROUP operation: all
// tasks or none.
func (m *Master) launchGroupLocked(fw *framework, a *agent, lg *mesos.Offer_Operation_LaunchGroup, remaining *resources, launched map[string]bool) {
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
	execRes, err := m.opResources(fw, lg.Executor.Resources)
	if err != nil {
		fail("Invalid executor resources: " + err.Error())
		return
	}
	total := execRes.clone()
	resByTask := make([]resources, len(tasks))
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
		fail(fmt.Sprintf("Total resources %s required by task group and its executor is more than available %s", total, *remaining))
		return
	}
	remaining.sub(total)
	g := &taskGroup{executorID: lg.Executor.ExecutorID.Value, agentID: a.spec.ID, execRes: execRes}
	for i := range tasks {
		launched[tasks[i].TaskID.Value] = true
		g.tasks = append(g.tasks, m.launchTaskLocked(fw, a, tasks[i], resByTask[i], g))
	}
}

// SetAcceptDelay makes the master apply the operations of later ACCEPT
// calls d after answering them (202), as a Mesos master does after
// authorizing them asynchronously; the offers are consumed at once. Zero
// (the default) applies them right away.
func (m *Master) SetAcceptDelay(d time.Duration) {
	m.mu.Lock()
	defer m.unlock()
	m.acceptDelay = d
}
