package mesostest_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/mesos/mesostest"
)

func TestLoseAgent(t *testing.T) {
	for _, pa := range []bool{false, true} {
		name, want := "TASK_LOST", mesos.TASK_LOST
		var caps []mesos.FrameworkInfo_Capability_Type
		if pa {
			name, want = "PARTITION_AWARE", mesos.TASK_UNREACHABLE
			caps = append(caps, mesos.FrameworkInfo_Capability_PARTITION_AWARE)
		}
		t.Run(name, func(t *testing.T) {
			m := newMaster(t, mesostest.Config{})
			if err := m.AddAgent("doomed", 1, 512, 0); err != nil {
				t.Fatal(err)
			}
			s := subscribe(t, m, protobufCodec, fwInfo("lose", caps...))
			task := s.runSleep("doomed", "victim")
			// The rest of the agent is re-offered (refuse_seconds 0).
			rest := s.offer("doomed")

			if err := m.LoseAgent("doomed"); err != nil {
				t.Fatal(err)
			}
			rescind := s.next("RESCIND", isType(scheduler.Event_RESCIND))
			if rescind.GetRescind().OfferID != rest.ID {
				t.Errorf("rescinded %v, want %v", rescind.GetRescind().OfferID, rest.ID)
			}
			st := s.expectUpdate("victim", want)
			if len(st.UUID) != 0 || st.GetReason() != mesos.REASON_AGENT_REMOVED || st.GetSource() != mesos.SOURCE_MASTER {
				t.Errorf("agent loss status = %v", st)
			}
			failure := s.next("FAILURE", isType(scheduler.Event_FAILURE))
			if failure.GetFailure().GetAgentID().GetValue() != "doomed" {
				t.Errorf("FAILURE = %v", failure)
			}
			waitFor(t, m, "process killed", func() bool { return m.RunningProcesses() == 0 })
			if err := syscall.Kill(task.PID, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process %d still exists: %v", task.PID, err)
			}
			// Reconciling the task with its agent reports it the same way;
			// without the agent the master does not know where it was
			// (Master::reconcile case 6).
			s.mustCall(calls.Reconcile(calls.ReconcileTasks(map[string]string{"victim": "doomed"})))
			if st := s.expectUpdate("victim", want); st.GetReason() != mesos.REASON_RECONCILIATION {
				t.Errorf("reconciliation of lost task = %v", st)
			}
			unknown := mesos.TASK_LOST
			if pa {
				unknown = mesos.TASK_UNKNOWN
			}
			s.mustCall(calls.Reconcile(calls.ReconcileTasks(map[string]string{"victim": ""})))
			s.expectUpdate("victim", unknown)
			if err := m.AddAgent("doomed", 1, 1, 1); err == nil {
				t.Error("a lost agent re-registered")
			}
		})
	}
}

// processState returns the state letter of a process (/proc/<pid>/stat):
// "T" when stopped, "" when it does not exist.
func processState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return f[0]
}

// TestPartitionAndHeal: a partitioned agent is unreachable (its tasks too,
// to reconciliation and KILL) and, when the partition ends, re-registers:
// its tasks are re-added and reported running again, not killed (Mesos
// 1.5+, for every framework). An isolating partition stops the processes
// until then.
func TestPartitionAndHeal(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pa        bool
		isolate   bool
		whilePart mesos.TaskState
	}{
		{"PARTITION_AWARE isolated", true, true, mesos.TASK_UNREACHABLE},
		{"PARTITION_AWARE from the master only", true, false, mesos.TASK_UNREACHABLE},
		{"not partition aware", false, true, mesos.TASK_LOST},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMaster(t, mesostest.Config{})
			if err := m.AddAgent("a1", 1, 512, 0); err != nil {
				t.Fatal(err)
			}
			var caps []mesos.FrameworkInfo_Capability_Type
			if tc.pa {
				caps = append(caps, mesos.FrameworkInfo_Capability_PARTITION_AWARE)
			}
			s := subscribe(t, m, protobufCodec, fwInfo("partition", caps...))
			// One process (no shell waiting for a child), so that its
			// state is the task's.
			o := s.offer("a1")
			s.launch(o, 0, shellTask("p1", o.AgentID, "exec sleep 30", 0.1, 32))
			s.expectAck("p1", mesos.TASK_STARTING)
			s.expectAck("p1", mesos.TASK_RUNNING)
			task, _ := taskByID(m, "p1")

			if err := m.PartitionAgent("a1", tc.isolate); err != nil {
				t.Fatal(err)
			}
			st := s.expectUpdate("p1", tc.whilePart)
			if st.GetReason() != mesos.REASON_AGENT_REMOVED || len(st.UUID) != 0 {
				t.Errorf("partition status = %v", st)
			}
			s.next("FAILURE", isType(scheduler.Event_FAILURE))
			tk, _ := taskByID(m, "p1")
			if !tk.Unreachable || tk.Active || !tk.ProcessRunning || tk.Frozen != tc.isolate {
				t.Errorf("task during the partition = %+v", tk)
			}
			if tc.isolate {
				// Signals are delivered asynchronously.
				sluicetest.WaitFor(t, waitTimeout, "the process stopped", func() bool { return processState(task.PID) == "T" })
			} else if processState(task.PID) == "T" {
				t.Error("process stopped by a partition from the master only")
			}
			if a := m.Agents()[0]; !a.Lost || !a.Partitioned {
				t.Errorf("agent during the partition = %+v", a)
			}
			// Reconciliation and KILL know it as unreachable; the kill is
			// not remembered.
			s.mustCall(calls.Reconcile(calls.ReconcileTasks(map[string]string{"p1": "a1"})))
			if st := s.expectUpdate("p1", tc.whilePart); st.GetReason() != mesos.REASON_RECONCILIATION {
				t.Errorf("reconciliation = %v", st)
			}
			s.mustCall(calls.Kill("p1", "a1"))
			s.expectUpdate("p1", tc.whilePart)
			s.mustCall(calls.Reconcile())
			s.marker("m1", "p1")
			if err := m.HealAgent("a1"); err != nil {
				t.Fatal(err)
			}
			st = s.expectUpdate("p1", mesos.TASK_RUNNING)
			if st.GetReason() != mesos.REASON_AGENT_REREGISTERED || st.GetMessage() != "Unreachable agent re-reregistered" || len(st.UUID) != 0 {
				t.Errorf("re-registration status = %v", st)
			}
			tk, _ = taskByID(m, "p1")
			if !tk.Active || tk.Unreachable || tk.Frozen || tk.PID != task.PID {
				t.Errorf("task after the partition = %+v", tk)
			}
			sluicetest.WaitFor(t, waitTimeout, "the process continued", func() bool { return processState(task.PID) != "T" })
			if err := m.HealAgent("a1"); err == nil {
				t.Error("healing a registered agent succeeded")
			}
			s.mustCall(calls.Kill("p1", "a1"))
			s.expectAck("p1", mesos.TASK_KILLED)
		})
	}
}

// TestUpdatesWaitForThePartitionToEnd: a task that ends while its agent is
// partitioned is reported when the agent re-registers, reliably (with a
// uuid), after the re-registration update.
func TestUpdatesWaitForThePartitionToEnd(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, m, protobufCodec, fwInfo("wait", mesos.FrameworkInfo_Capability_PARTITION_AWARE))
	task := s.runSleep("a1", "short")
	if err := m.PartitionAgent("a1", false); err != nil {
		t.Fatal(err)
	}
	s.expectUpdate("short", mesos.TASK_UNREACHABLE)
	// The process dies during the partition.
	if err := syscall.Kill(task.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var tk mesostest.Task
	waitFor(t, m, "the agent saw the process end", func() bool { tk, _ = taskByID(m, "short"); return !tk.ProcessRunning })
	if tk.State != mesos.TASK_FAILED || tk.PendingUpdates != 1 {
		t.Fatalf("agent-side task after the exit = %+v", tk)
	}
	s.marker("m1", "short")
	if err := m.HealAgent("a1"); err != nil {
		t.Fatal(err)
	}
	rereg := s.update("short")
	if rereg.GetReason() != mesos.REASON_AGENT_REREGISTERED || rereg.GetState() != tk.State {
		t.Errorf("re-registration status = %v, want the agent's state %s", rereg, tk.State)
	}
	s.expectAck("short", tk.State)
}

// TestMarkAgentGone: an operator marks a partitioned agent gone: its tasks
// are TASK_GONE_BY_OPERATOR, their processes are killed, it cannot come
// back.
func TestMarkAgentGone(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, m, protobufCodec, fwInfo("gone", mesos.FrameworkInfo_Capability_PARTITION_AWARE))
	task := s.runSleep("a1", "g1")
	if err := m.PartitionAgent("a1", true); err != nil {
		t.Fatal(err)
	}
	s.expectUpdate("g1", mesos.TASK_UNREACHABLE)
	if err := m.MarkAgentGone("a1"); err != nil {
		t.Fatal(err)
	}
	st := s.expectUpdate("g1", mesos.TASK_GONE_BY_OPERATOR)
	if st.GetReason() != mesos.REASON_AGENT_REMOVED_BY_OPERATOR || len(st.UUID) != 0 {
		t.Errorf("gone status = %v", st)
	}
	waitFor(t, m, "the process killed", func() bool { return m.RunningProcesses() == 0 })
	if err := syscall.Kill(task.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists: %v", task.PID, err)
	}
	s.mustCall(calls.Reconcile(calls.ReconcileTasks(map[string]string{"g1": "a1"})))
	s.expectUpdate("g1", mesos.TASK_GONE_BY_OPERATOR)
	if err := m.HealAgent("a1"); err == nil {
		t.Error("a gone agent came back")
	}
	if a := m.Agents()[0]; !a.Gone || !a.Lost {
		t.Errorf("agent = %+v", a)
	}
}
