package mesostest

import (
	"fmt"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// AgentSpec describes a simulated agent.
type AgentSpec struct {
	// ID is the agent ID (required; Mesos ID rules: no '/', not "." or
	// "..").
	ID string
	// Hostname is reported in offers. Default: the ID. All tasks run on
	// the local machine whatever the hostname says.
	Hostname string
	// CPUs, Mem (MB) and Disk (MB) are the agent's total scalar
	// resources, offered as unreserved ("*") resources.
	CPUs, Mem, Disk float64
}

// agent is a simulated Mesos agent.
type agent struct {
	spec  AgentSpec
	total scalars
	lost  bool
}

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
	if a, ok := m.agents[spec.ID]; ok {
		if a.lost {
			return fmt.Errorf("mesostest: adding agent %s: agent was lost and cannot re-register", spec.ID)
		}
		return fmt.Errorf("mesostest: adding agent %s: already registered", spec.ID)
	}
	m.agents[spec.ID] = &agent{spec: spec, total: newScalars(spec.CPUs, spec.Mem, spec.Disk)}
	m.agentOrder = append(m.agentOrder, spec.ID)
	m.logf("mesostest: agent %s registered (cpus:%v mem:%v disk:%v)", spec.ID, spec.CPUs, spec.Mem, spec.Disk)
	m.kickAllocation()
	return nil
}

// LoseAgent simulates the loss of an agent (e.g. failed health checks),
// as Master::removeSlave does: its outstanding offers are rescinded
// (RESCIND), every active task on it is reported TASK_LOST, or
// TASK_UNREACHABLE to PARTITION_AWARE frameworks (reason
// REASON_AGENT_REMOVED, source SOURCE_MASTER, no uuid: these updates are
// not retried), its task processes are killed, and every connected
// framework receives a FAILURE event for the agent.
func (m *Master) LoseAgent(id string) error {
	m.mu.Lock()
	defer m.unlock()
	if m.closed {
		return ErrClosed
	}
	a, ok := m.agents[id]
	if !ok {
		return fmt.Errorf("mesostest: losing agent %s: unknown agent", id)
	}
	if a.lost {
		return fmt.Errorf("mesostest: losing agent %s: already lost", id)
	}
	a.lost = true
	m.logf("mesostest: agent %s lost", id)

	for _, o := range m.sortedOffersLocked() {
		if o.agentID == id {
			m.rescindLocked(o)
		}
	}
	for _, t := range m.activeTasksLocked() {
		if t.agentID != id {
			continue
		}
		fw := m.frameworks[t.fwID]
		state := mesos.TASK_LOST
		if fw.partitionAware {
			state = mesos.TASK_UNREACHABLE
		}
		t.lost = true
		t.pending = nil
		m.setTerminalLocked(t, state)
		delete(m.tasks, t.key())
		m.forceKillLocked(t, "agent lost")
		m.sendLocked(fw, updateEvent(m.masterStatus(t.id, id, state,
			mesos.REASON_AGENT_REMOVED, "Agent "+id+" removed: agent lost")))
	}
	for _, fid := range m.fwOrder {
		fw := m.frameworks[fid]
		if fw.removed {
			continue
		}
		m.sendLocked(fw, &scheduler.Event{
			Type:    scheduler.Event_FAILURE,
			Failure: &scheduler.Event_Failure{AgentID: &mesos.AgentID{Value: id}},
		})
	}
	m.kickAllocation()
	return nil
}

// freeLocked returns the resources of a that are neither used by tasks nor
// outstanding in offers.
func (m *Master) freeLocked(a *agent) scalars {
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
	return free
}

// Agent is a snapshot of a simulated agent.
type Agent struct {
	// ID and Hostname as given to AddAgent / AddAgentSpec.
	ID, Hostname string
	// Total resources of the agent.
	Total Resources
	// Free resources: neither used by tasks nor offered.
	Free Resources
	// Lost reports whether LoseAgent was called for it.
	Lost bool
}

func (m *Master) agentsLocked() []Agent {
	out := make([]Agent, 0, len(m.agentOrder))
	for _, id := range m.agentOrder {
		a := m.agents[id]
		ag := Agent{ID: id, Hostname: a.spec.Hostname, Total: a.total.snapshot(), Lost: a.lost}
		if !a.lost {
			ag.Free = m.freeLocked(a).snapshot()
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
