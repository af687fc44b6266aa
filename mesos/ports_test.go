package mesos_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/mesos/mesostest"
)

// TestNodesUseOfferedPorts runs nodes on agents that enforce port
// allocations (the network/ports isolator kills a task listening on a port
// it was not given): each node gets two of its offer's ports, binds its
// actor endpoint and control API on them, on the agent's hostname, and
// advertises them in Consul; no node is killed.
func TestNodesUseOfferedPorts(t *testing.T) {
	e := newEnvWith(t, mesostest.Config{EnforcePorts: true, Agents: twoAgents()})
	s := e.start(e.config("s1"), nodePool("count", 3))
	e.waitMaster(waitTimeout, "3 running tasks", func() bool { return len(e.running()) == 3 })
	e.waitMembersAreTasks()
	agentPorts := map[string][]mesostest.PortRange{}
	for _, a := range e.master.Agents() {
		agentPorts[a.ID] = a.Total.Ports
	}
	offered := func(agent string, p uint64) bool {
		return slices.ContainsFunc(agentPorts[agent], func(r mesostest.PortRange) bool { return r.Begin <= p && p <= r.End })
	}
	tasks := e.running()
	for _, m := range e.members() {
		id := m.Service.Meta["sluice_id"]
		tk, ok := tasks[id]
		if !ok {
			t.Fatalf("member %s is no running task", id)
		}
		var ports []uint64
		for _, r := range tk.Resources.Ports {
			for p := r.Begin; p <= r.End; p++ {
				ports = append(ports, p)
			}
		}
		if len(ports) != 2 || !offered(tk.AgentID, ports[0]) || !offered(tk.AgentID, ports[1]) {
			t.Fatalf("task %s has ports %v, want 2 of its agent's %v", id, ports, agentPorts[tk.AgentID])
		}
		if got, want := fmt.Sprintf("%s:%d", m.Service.Address, m.Service.Port), "127.0.0.1:"+strconv.FormatUint(ports[0], 10); got != want {
			t.Errorf("node %s advertises its actor endpoint at %s, want %s", id, got, want)
		}
		if got, want := m.Service.Meta["sluice_http"], "127.0.0.1:"+strconv.FormatUint(ports[1], 10); got != want {
			t.Errorf("node %s advertises its control API at %s, want %s", id, got, want)
		}
	}
	// The nodes work, and stay up: the isolator has had time to look.
	var first int64
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "records counted", func() bool { first = e.processed("count"); return first > 0 })
	rounds := e.master.AllocationRounds()
	e.waitMaster(10*time.Second, "20 allocation rounds (5 port checks)", func() bool { return e.master.AllocationRounds() >= rounds+20 })
	if n := len(e.master.Tasks()); n != 3 {
		for _, tk := range e.master.Tasks() {
			t.Logf("task %s: %s %s", tk.ID, tk.State, tk.ExitStatus)
		}
		t.Fatalf("%d tasks launched for 3 slots", n)
	}
	for _, ts := range s.Status().Tasks {
		if len(ts.Ports) != 2 {
			t.Errorf("status of task %s shows ports %v", ts.ID, ts.Ports)
		}
	}
}
