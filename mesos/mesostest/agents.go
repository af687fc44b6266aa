package mesostest

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// AgentSpec describes a simulated agent.
type AgentSpec struct {
	// ID is the agent ID (required; Mesos ID rules: no '/', not "." or
	// "..").
	ID string
	// Hostname is reported in offers. Default: the ID. All tasks run on
	// the local machine whatever the hostname says, so tests that start
	// programs binding the host name use "127.0.0.1" or "localhost".
	Hostname string
	// CPUs, Mem (MB) and Disk (MB) are the agent's unreserved ("*")
	// scalar resources.
	CPUs, Mem, Disk float64
	// Ports are the agent's unreserved "ports" ranges.
	Ports []PortRange
	// FreePorts, if positive, adds that many ports, picked by FreePorts
	// when the agent registers, to Ports; none of them is a port of
	// another agent.
	FreePorts int
	// Reserved are statically reserved resources (an agent started with
	// --resources='cpus(role):2;…'): offered only to frameworks of the
	// role.
	Reserved []StaticReservation
}

// StaticReservation is a part of an agent's resources reserved for a role
// by its configuration.
type StaticReservation struct {
	Role            string
	CPUs, Mem, Disk float64
	Ports           []PortRange
}

// agentState is the master's view of an agent.
type agentState int

const (
	// agentRegistered: connected; its tasks are known and its resources
	// offered.
	agentRegistered agentState = iota
	// agentRecovering: known from the registry after a master failover
	// but not re-registered yet: its tasks are unknown to the master,
	// explicit reconciliation of them gets no answer, their status
	// updates wait, and it is not offered.
	agentRecovering
	// agentUnreachable: partitioned, or its machine died; its tasks are
	// unreachable until it re-registers (if it ever does).
	agentUnreachable
	// agentGone: marked gone by the operator; it never comes back.
	agentGone
)

func (s agentState) String() string {
	switch s {
	case agentRegistered:
		return "registered"
	case agentRecovering:
		return "recovering"
	case agentUnreachable:
		return "unreachable"
	case agentGone:
		return "gone"
	}
	return fmt.Sprintf("agentState(%d)", int(s))
}

// agent is a simulated Mesos agent.
type agent struct {
	spec AgentSpec
	// total holds the agent's resources, with the reservations and
	// persistent volumes made since it registered (its checkpointed
	// resources).
	total resources
	state agentState
	// dead: its machine died (LoseAgent): processes killed, it cannot
	// re-register.
	dead bool
	// frozen: its task processes are stopped (SIGSTOP), as when a
	// partition cuts the agent off from everything.
	frozen bool
	// reregisterAt is when a recovering agent re-registers.
	reregisterAt time.Time
}

func (a *agent) connected() bool { return a.state == agentRegistered }

// AddAgent registers an agent with the given ID (also used as its
// hostname) and total resources. Its resources are offered in the next
// allocation round.
func (m *Master) AddAgent(id string, cpus, mem, disk float64) error {
	return m.AddAgentSpec(AgentSpec{ID: id, CPUs: cpus, Mem: mem, Disk: disk})
}

// AddAgentSpec registers an agent described by spec. Agent IDs are never
// reused: adding an ID that is registered or was lost is an error (a Mesos
// master refuses removed agents too).
func (m *Master) AddAgentSpec(spec AgentSpec) error {
	if err := validateID(spec.ID); err != nil {
		return fmt.Errorf("mesostest: adding agent: invalid agent ID: %w", err)
	}
	if spec.CPUs < 0 || spec.Mem < 0 || spec.Disk < 0 {
		return fmt.Errorf("mesostest: adding agent %s: negative resources", spec.ID)
	}
	if spec.Hostname == "" {
		spec.Hostname = spec.ID
	}
	m.mu.Lock()
	defer m.unlock()
	if m.closed {
		return ErrClosed
	}
	if spec.FreePorts > 0 {
		// All agents run on this machine: none gets another's ports.
		var taken rangeSet
		for _, a := range m.agents {
			taken = taken.union(rangeSet(a.spec.Ports))
		}
		free, err := freePorts(spec.FreePorts, taken.union(rangeSet(spec.Ports).normalize()))
		if err != nil {
			return fmt.Errorf("mesostest: adding agent %s: %w", spec.ID, err)
		}
		spec.Ports = append(append([]PortRange(nil), spec.Ports...), free...)
		spec.FreePorts = 0
	}
	total := newResources(spec.CPUs, spec.Mem, spec.Disk, spec.Ports)
	for _, r := range spec.Reserved {
		if r.Role == "" || r.Role == "*" {
			return fmt.Errorf("mesostest: adding agent %s: a static reservation needs a role other than '*'", spec.ID)
		}
		for name, v := range map[string]float64{"cpus": r.CPUs, "mem": r.Mem, "disk": r.Disk} {
			total.addScalar(kind{name: name, role: r.Role, static: true}, toFixed(v))
		}
		total.addRanges(kind{name: "ports", role: r.Role, static: true}, rangeSet(r.Ports).normalize())
	}
	if a, ok := m.agents[spec.ID]; ok {
		if a.state != agentRegistered {
			return fmt.Errorf("mesostest: adding agent %s: agent was lost and cannot re-register", spec.ID)
		}
		return fmt.Errorf("mesostest: adding agent %s: already registered", spec.ID)
	}
	m.agents[spec.ID] = &agent{spec: spec, total: total}
	m.agentOrder = append(m.agentOrder, spec.ID)
	m.logf("mesostest: agent %s registered (%s)", spec.ID, total)
	m.kickAllocation()
	return nil
}

// LoseAgent simulates the death of an agent's machine, which the master
// notices as a partition (Master::markUnreachable): its task processes
// are killed, its outstanding offers are rescinded (RESCIND), every task
// on it is reported TASK_UNREACHABLE to PARTITION_AWARE frameworks and
// TASK_LOST to others (reason REASON_AGENT_REMOVED, source SOURCE_MASTER,
// no uuid: these updates are not retried), and every connected framework
// receives a FAILURE event for the agent. The agent never re-registers;
// MarkAgentGone tells the master it is gone for good. An agent already
// partitioned (PartitionAgent) dies without further updates.
func (m *Master) LoseAgent(id string) error {
	m.mu.Lock()
	defer m.unlock()
	a, err := m.agentLocked(id, "losing")
	if err != nil {
		return err
	}
	if a.dead {
		return fmt.Errorf("mesostest: losing agent %s: already lost", id)
	}
	a.dead = true
	if a.state == agentRegistered || a.state == agentRecovering {
		m.markUnreachableLocked(a, "agent lost")
	}
	for _, t := range m.activeTasksLocked() {
		if t.agentID == id {
			// The agent's status update manager dies with it: nothing
			// more is reported; the master keeps the task unreachable.
			t.lost = true
			t.pending = nil
			m.forceKillLocked(t, "agent lost")
		}
	}
	return nil
}

// PartitionAgent simulates a network partition between the master and an
// agent, which the master marks unreachable as LoseAgent describes
// (TASK_UNREACHABLE or TASK_LOST, RESCIND, FAILURE). The agent lives on:
// with isolate false its tasks keep running and can still reach everything
// but the master; with isolate true the partition cuts it off from
// everything, which is simulated by stopping its task processes (SIGSTOP)
// until HealAgent. Updates of its tasks wait for the agent to re-register.
func (m *Master) PartitionAgent(id string, isolate bool) error {
	m.mu.Lock()
	defer m.unlock()
	a, err := m.agentLocked(id, "partitioning")
	if err != nil {
		return err
	}
	if a.dead || a.state == agentUnreachable {
		return fmt.Errorf("mesostest: partitioning agent %s: already %s", id, a.state)
	}
	m.markUnreachableLocked(a, "agent partitioned")
	if isolate {
		a.frozen = true
		m.signalAgentLocked(a, syscall.SIGSTOP)
	}
	return nil
}

// HealAgent ends the partition of an agent: it re-registers, as
// Master::_reregisterSlave does on Mesos 1.5 and later for every framework:
// its tasks are known again and each connected framework gets an update
// with the task's latest state (reason REASON_AGENT_REREGISTERED, message
// "Unreachable agent re-reregistered", no uuid); tasks are not killed.
// Updates the agent generated meanwhile are then delivered. Stopped
// processes continue (SIGCONT).
func (m *Master) HealAgent(id string) error {
	m.mu.Lock()
	defer m.unlock()
	a, err := m.agentLocked(id, "healing")
	if err != nil {
		return err
	}
	if a.dead || a.state != agentUnreachable {
		return fmt.Errorf("mesostest: healing agent %s: it is %s%s, not partitioned", id, a.state, map[bool]string{true: " and dead"}[a.dead])
	}
	if a.frozen {
		a.frozen = false
		m.signalAgentLocked(a, syscall.SIGCONT)
	}
	a.state = agentRegistered
	m.logf("mesostest: unreachable agent %s re-registered", id)
	now := time.Now()
	for _, t := range m.activeTasksLocked() {
		if t.agentID != id || !t.unreachable {
			continue
		}
		t.unreachable = false
		if fw := m.frameworks[t.fwID]; fw != nil && !fw.removed {
			st := m.masterStatus(t.id, id, t.state, mesos.REASON_AGENT_REREGISTERED, "Unreachable agent re-reregistered")
			st.ExecutorID = &mesos.ExecutorID{Value: t.executorID}
			m.sendLocked(fw, updateEvent(st))
		}
		if len(t.pending) > 0 {
			t.retryDelay = m.cfg.StatusUpdateRetryInterval
			m.deliverHeadLocked(t, now)
		}
	}
	m.kickAllocation()
	return nil
}

// MarkAgentGone does what an operator's MARK_AGENT_GONE call does: the
// agent is gone for good. Its tasks are reported TASK_GONE_BY_OPERATOR to
// PARTITION_AWARE frameworks and TASK_LOST to others (reason
// REASON_AGENT_REMOVED_BY_OPERATOR, no uuid), its processes, if any are
// left, are killed (Mesos shuts the agent down when it reconnects), and
// it can never re-register. It works on registered and unreachable
// agents.
func (m *Master) MarkAgentGone(id string) error {
	m.mu.Lock()
	defer m.unlock()
	a, err := m.agentLocked(id, "marking gone")
	if err != nil {
		return err
	}
	if a.state == agentGone {
		return fmt.Errorf("mesostest: marking agent %s gone: already gone", id)
	}
	wasRegistered := a.state == agentRegistered
	if wasRegistered {
		m.rescindAgentOffersLocked(id)
	}
	a.state = agentGone
	if a.frozen {
		a.frozen = false
		m.signalAgentLocked(a, syscall.SIGCONT)
	}
	m.logf("mesostest: agent %s marked gone", id)
	for _, t := range m.activeTasksLocked() {
		if t.agentID != id {
			continue
		}
		fw := m.frameworks[t.fwID]
		state := mesos.TASK_LOST
		if fw.partitionAware {
			state = mesos.TASK_GONE_BY_OPERATOR
		}
		t.pending = nil
		t.unreachable = false
		t.orphaned = true
		m.setTerminalLocked(t, state)
		delete(m.tasks, t.key())
		m.forceKillLocked(t, "agent marked gone")
		m.sendLocked(fw, updateEvent(m.masterStatus(t.id, id, state,
			mesos.REASON_AGENT_REMOVED_BY_OPERATOR, "Agent "+id+" marked gone by the operator")))
	}
	if wasRegistered {
		m.failureEventLocked(id)
	}
	m.kickAllocation()
	return nil
}

// markUnreachableLocked marks a registered agent unreachable
// (Master::markUnreachable, then __removeSlave): RESCIND of its offers,
// TASK_UNREACHABLE or TASK_LOST for its tasks, FAILURE to every framework.
func (m *Master) markUnreachableLocked(a *agent, why string) {
	id := a.spec.ID
	m.logf("mesostest: agent %s marked unreachable (%s)", id, why)
	m.rescindAgentOffersLocked(id)
	wasKnown := a.state == agentRegistered
	a.state = agentUnreachable
	for _, t := range m.activeTasksLocked() {
		if t.agentID != id || t.unreachable {
			continue
		}
		t.unreachable = true
		if !wasKnown || t.terminal && len(t.pending) == 0 {
			continue
		}
		fw := m.frameworks[t.fwID]
		state := mesos.TASK_LOST
		if fw.partitionAware {
			state = mesos.TASK_UNREACHABLE
		}
		m.sendLocked(fw, updateEvent(m.masterStatus(t.id, id, state,
			mesos.REASON_AGENT_REMOVED, "Agent "+id+" removed: "+why)))
	}
	m.failureEventLocked(id)
	m.kickAllocation()
}

// failureEventLocked sends FAILURE with the agent ID to every framework.
func (m *Master) failureEventLocked(agentID string) {
	for _, fid := range m.fwOrder {
		fw := m.frameworks[fid]
		if fw.removed {
			continue
		}
		m.sendLocked(fw, &scheduler.Event{
			Type:    scheduler.Event_FAILURE,
			Failure: &scheduler.Event_Failure{AgentID: &mesos.AgentID{Value: agentID}},
		})
	}
}

func (m *Master) rescindAgentOffersLocked(agentID string) {
	for _, o := range m.sortedOffersLocked() {
		if o.agentID == agentID {
			m.rescindLocked(o)
		}
	}
}

// signalAgentLocked signals the process group of every running task of a.
func (m *Master) signalAgentLocked(a *agent, sig syscall.Signal) {
	for _, t := range m.allTasks {
		if t.agentID == a.spec.ID && t.running {
			signalGroup(t.pid, sig)
		}
	}
}

func (m *Master) agentLocked(id, doing string) (*agent, error) {
	if m.closed {
		return nil, ErrClosed
	}
	a, ok := m.agents[id]
	if !ok {
		return nil, fmt.Errorf("mesostest: %s agent %s: unknown agent", doing, id)
	}
	return a, nil
}

// freeLocked returns the resources of a that are neither used by tasks nor
// outstanding in offers.
func (m *Master) freeLocked(a *agent) resources {
	free := a.total.clone()
	for _, t := range m.allTasks {
		if t.agentID == a.spec.ID && !t.freed {
			free.sub(t.res)
		}
	}
	for _, g := range m.groupsOnAgentLocked(a.spec.ID) {
		free.sub(g.execRes)
	}
	for _, o := range m.offers {
		if o.agentID == a.spec.ID {
			free.sub(o.res)
		}
	}
	for _, p := range m.pendingAccepts {
		if p.agentID == a.spec.ID {
			free.sub(p.res)
		}
	}
	return free
}

// volumeDir is where a persistent volume of an agent lives, laid out like
// an agent's work directory.
func (m *Master) volumeDir(agentID, role, id string) string {
	return filepath.Join(m.rootDir, "agents", agentID, "volumes", "roles", role, id)
}

// Agent is a snapshot of a simulated agent.
type Agent struct {
	// ID and Hostname as given to AddAgent / AddAgentSpec.
	ID, Hostname string
	// Total resources of the agent (reservations and volumes included).
	Total Resources
	// Free resources: neither used by tasks nor offered (zero unless the
	// agent is registered).
	Free Resources
	// Lost reports whether the agent is not registered: unreachable
	// (partitioned or dead) or gone.
	Lost bool
	// Partitioned reports a partition HealAgent can end; Frozen one that
	// also stopped the agent's processes.
	Partitioned, Frozen bool
	// Recovering reports an agent that has not re-registered with a new
	// leading master yet.
	Recovering bool
	// Gone reports an agent marked gone.
	Gone bool
	// Volumes are the agent's persistent volumes.
	Volumes []Volume
}

// Volume is a snapshot of a persistent volume.
type Volume struct {
	// ID is the persistence ID, Role the reservation role, ContainerPath
	// where tasks see it in their sandbox.
	ID, Role, ContainerPath string
	// Size in MB.
	Size float64
	// Dir is where it lives on the (simulated) agent.
	Dir string
}

func (m *Master) agentsLocked() []Agent {
	out := make([]Agent, 0, len(m.agentOrder))
	for _, id := range m.agentOrder {
		a := m.agents[id]
		ag := Agent{
			ID: id, Hostname: a.spec.Hostname, Total: a.total.snapshot(),
			Lost:        a.state == agentUnreachable || a.state == agentGone,
			Partitioned: a.state == agentUnreachable && !a.dead,
			Frozen:      a.frozen,
			Recovering:  a.state == agentRecovering,
			Gone:        a.state == agentGone,
		}
		if a.connected() {
			ag.Free = m.freeLocked(a).snapshot()
		}
		for _, k := range a.total.kinds() {
			if k.volume != "" {
				ag.Volumes = append(ag.Volumes, Volume{ID: k.volume, Role: k.role, ContainerPath: k.path,
					Size: fromFixed(a.total.scalar[k]), Dir: m.volumeDir(id, k.role, k.volume)})
			}
		}
		out = append(out, ag)
	}
	return out
}

// Agents returns a snapshot of all agents in registration order.
func (m *Master) Agents() []Agent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.agentsLocked()
}

// removeVolumeDir deletes a destroyed volume's directory.
func removeVolumeDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing volume directory: %w", err)
	}
	return nil
}
