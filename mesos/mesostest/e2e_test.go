package mesostest_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/encoding"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"

	"github.com/sluicehq/sluice/mesos/mesostest"
)

func TestLaunchAndFinish(t *testing.T) {
	for _, codec := range []encoding.Codec{protobufCodec, jsonCodec} {
		t.Run(codecName(codec), func(t *testing.T) {
			m := newMaster(t, mesostest.Config{})
			if err := m.AddAgent("agent-1", 2, 1024, 4096); err != nil {
				t.Fatal(err)
			}
			s := subscribe(t, m, codec, fwInfo("launch"))
			offers := s.offers()
			if len(offers) != 1 {
				t.Fatalf("got %d offers, want 1", len(offers))
			}
			o := offers[0]
			if o.AgentID.Value != "agent-1" || offerScalar(o, "cpus") != 2 || offerScalar(o, "mem") != 1024 || offerScalar(o, "disk") != 4096 {
				t.Fatalf("offer = %v", o)
			}

			script := `echo "task=$MESOS_TASK_ID agent=$MESOS_AGENT_ID fw=$MESOS_FRAMEWORK_ID greeting=$GREETING"; ` +
				`test "$MESOS_SANDBOX" = "$PWD" && test "$PWD" -ef . || exit 9; echo oops >&2`
			task := shellTask("t1", o.AgentID, script, 0.5, 128)
			greeting := "hello"
			task.Command.Environment = &mesos.Environment{Variables: []mesos.Environment_Variable{{Name: "GREETING", Value: &greeting}}}
			s.launch(o, 0, task)

			starting := s.expectUpdate("t1", mesos.TASK_STARTING)
			if starting.GetSource() != mesos.SOURCE_EXECUTOR || starting.GetAgentID().GetValue() != "agent-1" {
				t.Errorf("STARTING status = %v", starting)
			}
			// Updates of a task are delivered one at a time: RUNNING only
			// comes after STARTING is acknowledged.
			s.ack(starting)
			s.expectAck("t1", mesos.TASK_RUNNING)
			finished := s.expectUpdate("t1", mesos.TASK_FINISHED)
			if finished.GetMessage() != "Command exited with status 0" {
				t.Errorf("FINISHED message = %q", finished.GetMessage())
			}
			waitFor(t, m, "resources released", func() bool {
				a := m.Agents()[0]
				return a.Free.CPUs+sumOffered(m, "cpus") == 2
			})
			s.ack(finished)
			waitFor(t, m, "task forgotten after acknowledgement", func() bool {
				tk, _ := taskByID(m, "t1")
				return !tk.Active && tk.PendingUpdates == 0
			})

			tk, _ := taskByID(m, "t1")
			out, err := os.ReadFile(filepath.Join(tk.Sandbox, "stdout"))
			if err != nil {
				t.Fatal(err)
			}
			want := "task=t1 agent=agent-1 fw=" + s.fwID + " greeting=hello\n"
			if string(out) != want {
				t.Errorf("stdout = %q, want %q", out, want)
			}
			if errOut, _ := os.ReadFile(filepath.Join(tk.Sandbox, "stderr")); string(errOut) != "oops\n" {
				t.Errorf("stderr = %q", errOut)
			}
			// The freed resources are offered again (the rest of the agent
			// was re-offered right after the launch, refuse_seconds 0).
			waitFor(t, m, "all cpus offered again", func() bool { return sumOffered(m, "cpus") == 2 })
		})
	}
}

func sumOffered(m *mesostest.Master, name string) float64 {
	total := 0.0
	for _, o := range m.Offers() {
		switch name {
		case "cpus":
			total += o.Resources.CPUs
		case "mem":
			total += o.Resources.Mem
		}
	}
	return total
}

func TestOneOfferPerAgent(t *testing.T) {
	m := newMaster(t, mesostest.Config{Agents: []mesostest.AgentSpec{
		{ID: "a1", CPUs: 1, Mem: 256}, {ID: "a2", Hostname: "host-2", CPUs: 2, Mem: 512},
	}})
	s := subscribe(t, m, protobufCodec, fwInfo("offers"))
	seen := map[string]mesos.Offer{}
	for len(seen) < 2 {
		for _, o := range s.offers() {
			if _, dup := seen[o.AgentID.Value]; dup {
				t.Fatalf("second outstanding offer for agent %s", o.AgentID.Value)
			}
			seen[o.AgentID.Value] = o
		}
	}
	if seen["a2"].Hostname != "host-2" || offerScalar(seen["a2"], "mem") != 512 {
		t.Errorf("offer for a2 = %v", seen["a2"])
	}
	// An agent added at run time is offered too.
	if err := m.AddAgent("a3", 1, 128, 0); err != nil {
		t.Fatal(err)
	}
	if o := s.offer("a3"); offerScalar(o, "mem") != 128 {
		t.Errorf("offer for a3 = %v", o)
	}
	if err := m.AddAgent("a3", 1, 1, 1); err == nil {
		t.Error("adding a duplicate agent succeeded")
	}
}

func TestKillTask(t *testing.T) {
	for _, killingState := range []bool{false, true} {
		name := "plain"
		var caps []mesos.FrameworkInfo_Capability_Type
		if killingState {
			name = "TASK_KILLING_STATE"
			caps = append(caps, mesos.FrameworkInfo_Capability_TASK_KILLING_STATE)
		}
		t.Run(name, func(t *testing.T) {
			m := newMaster(t, mesostest.Config{})
			if err := m.AddAgent("a1", 1, 512, 0); err != nil {
				t.Fatal(err)
			}
			s := subscribe(t, m, protobufCodec, fwInfo("kill", caps...))
			s.runSleep("a1", "sleeper")
			s.mustCall(calls.Kill("sleeper", "a1"))
			if killingState {
				s.expectAck("sleeper", mesos.TASK_KILLING)
			}
			killed := s.expectAck("sleeper", mesos.TASK_KILLED)
			if !strings.Contains(killed.GetMessage(), "signal Terminated") {
				t.Errorf("KILLED message = %q", killed.GetMessage())
			}
			waitFor(t, m, "no processes", func() bool { return m.RunningProcesses() == 0 })

			// Killing an unknown task is answered like reconciliation.
			s.mustCall(calls.Kill("ghost", "a1"))
			lost := s.expectUpdate("ghost", mesos.TASK_LOST)
			if len(lost.UUID) != 0 || lost.GetReason() != mesos.REASON_RECONCILIATION {
				t.Errorf("kill of unknown task: %v", lost)
			}
		})
	}
}

func TestProcessFailure(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, m, protobufCodec, fwInfo("crash"))
	task := s.runSleep("a1", "crasher")
	if err := m.KillTaskProcess("crasher"); err != nil {
		t.Fatal(err)
	}
	failed := s.expectAck("crasher", mesos.TASK_FAILED)
	if failed.GetMessage() != "Command terminated with signal Killed" {
		t.Errorf("FAILED message = %q", failed.GetMessage())
	}
	if err := syscall.Kill(task.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d still exists: %v", task.PID, err)
	}
	if err := m.KillTaskProcess("crasher"); err == nil {
		t.Error("KillTaskProcess of a dead task succeeded")
	}

	o := s.offer("a1")
	s.launch(o, 0, shellTask("exit3", o.AgentID, "exit 3", 0.1, 32))
	s.expectAck("exit3", mesos.TASK_STARTING)
	s.expectAck("exit3", mesos.TASK_RUNNING)
	if st := s.expectAck("exit3", mesos.TASK_FAILED); st.GetMessage() != "Command exited with status 3" {
		t.Errorf("FAILED message = %q", st.GetMessage())
	}
}

func TestDeclineFilters(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, m, protobufCodec, fwInfo("decline"))

	// A short refusal is honoured and then expires.
	o := s.offer("a1")
	const refuse = 400 * time.Millisecond
	declined := time.Now()
	s.mustCall(calls.Decline(o.ID).With(calls.RefuseSeconds(refuse)))
	o = s.offer("a1")
	if elapsed := time.Since(declined); elapsed < refuse {
		t.Fatalf("re-offered after %v, before refuse_seconds %v", elapsed, refuse)
	}

	// A long refusal holds across allocation rounds, until REVIVE clears it.
	s.mustCall(calls.Decline(o.ID).With(calls.RefuseSeconds(time.Hour)))
	waitFor(t, m, "offer declined", func() bool { return len(m.Offers()) == 0 })
	waitRounds(t, m, 3)
	s.none("OFFERS while filtered", isType(scheduler.Event_OFFERS))
	s.mustCall(calls.Revive())
	s.offer("a1")
}

func TestSuppressRevive(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, m, jsonCodec, fwInfo("suppress"))
	o := s.offer("a1")
	s.mustCall(calls.Suppress())
	waitFor(t, m, "framework suppressed", func() bool {
		f, _ := frameworkByID(m, s.fwID)
		return f.Suppressed
	})
	// Declining without a filter would normally bring the offer back in the
	// next round; a new agent would be offered too.
	s.mustCall(calls.Decline(o.ID).With(calls.RefuseSeconds(0)))
	if err := m.AddAgent("a2", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	waitRounds(t, m, 3)
	s.none("OFFERS while suppressed", isType(scheduler.Event_OFFERS))

	s.mustCall(calls.Revive())
	got := map[string]bool{}
	for len(got) < 2 {
		for _, o := range s.offers() {
			got[o.AgentID.Value] = true
		}
	}
}

func TestFailoverReconnect(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	info := withFailover(fwInfo("failover"), time.Hour)
	s1 := subscribe(t, m, protobufCodec, info)
	task := s1.runSleep("a1", "survivor")

	s1.disconnect()
	waitFor(t, m, "framework disconnected", func() bool {
		f, _ := frameworkByID(m, s1.fwID)
		return !f.Connected && !f.FailoverDeadline.IsZero() && !f.Removed
	})
	if len(m.Offers()) != 0 {
		t.Errorf("offers of a disconnected framework are still outstanding: %v", m.Offers())
	}

	info.ID = &mesos.FrameworkID{Value: s1.fwID}
	s2 := subscribe(t, m, protobufCodec, info)
	if s2.fwID != s1.fwID {
		t.Fatalf("re-subscribed as %s, want %s", s2.fwID, s1.fwID)
	}
	tk, _ := taskByID(m, "survivor")
	if !tk.ProcessRunning || tk.PID != task.PID {
		t.Fatalf("task after failover = %+v, want the same running process %d", tk, task.PID)
	}
	s2.mustCall(calls.Reconcile())
	if st := s2.expectUpdate("survivor", mesos.TASK_RUNNING); st.GetReason() != mesos.REASON_RECONCILIATION || len(st.UUID) != 0 {
		t.Errorf("reconciliation status = %v", st)
	}
	s2.offer("a1")
	s2.mustCall(calls.Kill("survivor", "a1"))
	s2.expectAck("survivor", mesos.TASK_KILLED)
}

func TestFailoverTimeoutExpires(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	info := withFailover(fwInfo("short-lived"), 300*time.Millisecond)
	s := subscribe(t, m, protobufCodec, info)
	s.runSleep("a1", "doomed")
	disconnected := time.Now()
	s.disconnect()
	waitFor(t, m, "framework removed and its processes killed", func() bool {
		f, _ := frameworkByID(m, s.fwID)
		return f.Removed && m.RunningProcesses() == 0
	})
	if elapsed := time.Since(disconnected); elapsed < 300*time.Millisecond {
		t.Errorf("framework removed after %v, before its failover timeout", elapsed)
	}

	info.ID = &mesos.FrameworkID{Value: s.fwID}
	s2, err := trySubscribe(t, m, protobufCodec, info)
	if err != nil {
		t.Fatal(err)
	}
	ev := s2.next("ERROR", func(*scheduler.Event) bool { return true })
	if ev.Type != scheduler.Event_ERROR || ev.GetError().Message != "Framework has been removed" {
		t.Fatalf("re-subscribing a removed framework: %v", ev)
	}
	s2.waitEnded()
}

func TestForcedFailover(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	info := withFailover(fwInfo("ha"), time.Hour)
	s1 := subscribe(t, m, protobufCodec, info)
	s1.offer("a1")

	info.ID = &mesos.FrameworkID{Value: s1.fwID}
	s2 := subscribe(t, m, jsonCodec, info)
	ev := s1.next("ERROR", isType(scheduler.Event_ERROR))
	if ev.GetError().Message != "Framework failed over" {
		t.Fatalf("old subscription got %v", ev)
	}
	s1.waitEnded()
	if err := s1.call(calls.Revive()); err == nil {
		t.Error("a call on the failed-over subscription succeeded")
	}
	// The new subscription gets fresh offers and works.
	o := s2.offer("a1")
	s2.launch(o, 0, shellTask("t", o.AgentID, "true", 0.1, 32))
	s2.expectAck("t", mesos.TASK_STARTING)
	s2.expectAck("t", mesos.TASK_RUNNING)
	s2.expectAck("t", mesos.TASK_FINISHED)
	f, _ := frameworkByID(m, s2.fwID)
	if !f.Connected || f.StreamID == "" {
		t.Errorf("framework after failover = %+v", f)
	}
}

func TestInvalidLaunches(t *testing.T) {
	for _, pa := range []bool{false, true} {
		name, invalidOffer := "TASK_LOST", mesos.TASK_LOST
		var caps []mesos.FrameworkInfo_Capability_Type
		if pa {
			name, invalidOffer = "PARTITION_AWARE", mesos.TASK_DROPPED
			caps = append(caps, mesos.FrameworkInfo_Capability_PARTITION_AWARE)
		}
		t.Run(name, func(t *testing.T) {
			m := newMaster(t, mesostest.Config{})
			if err := m.AddAgent("a1", 1, 256, 0); err != nil {
				t.Fatal(err)
			}
			s := subscribe(t, m, protobufCodec, fwInfo("invalid", caps...))
			o := s.offer("a1")

			// Over-committed: the first task fits, the second does not.
			s.launch(o, 0,
				shellTask("fits", o.AgentID, "sleep 30", 0.6, 128),
				shellTask("too-big", o.AgentID, "sleep 30", 0.6, 128))
			st := s.expectUpdate("too-big", mesos.TASK_ERROR)
			if st.GetReason() != mesos.REASON_TASK_INVALID || st.GetSource() != mesos.SOURCE_MASTER || len(st.UUID) != 0 ||
				!strings.Contains(st.GetMessage(), "more than available") {
				t.Errorf("over-commit status = %v", st)
			}
			s.expectAck("fits", mesos.TASK_STARTING)
			s.expectAck("fits", mesos.TASK_RUNNING)

			// The accepted offer cannot be used again, nor can an unknown one.
			s.launch(o, 0, shellTask("reused", o.AgentID, "true", 0.1, 32))
			st = s.expectUpdate("reused", invalidOffer)
			if st.GetReason() != mesos.REASON_INVALID_OFFERS || len(st.UUID) != 0 ||
				!strings.HasPrefix(st.GetMessage(), "Task launched with invalid offers: ") {
				t.Errorf("reused offer status = %v", st)
			}
			bogus := o
			bogus.ID = mesos.OfferID{Value: "no-such-offer"}
			s.launch(bogus, 0, shellTask("bogus", o.AgentID, "true", 0.1, 32))
			s.expectUpdate("bogus", invalidOffer)

			// Invalid task descriptions.
			o2 := s.offer("a1")
			noRes := shellTask("no-resources", o2.AgentID, "true", 0, 0)
			noRes.Resources = nil
			dup := shellTask("fits", o2.AgentID, "true", 0.1, 32)
			wrongAgent := shellTask("wrong-agent", mesos.AgentID{Value: "elsewhere"}, "true", 0.1, 32)
			noCmd := shellTask("no-command", o2.AgentID, "true", 0.1, 32)
			noCmd.Command = nil
			s.launch(o2, 0, noRes, dup, wrongAgent, noCmd)
			for _, id := range []string{"no-resources", "fits", "wrong-agent", "no-command"} {
				if st := s.expectUpdate(id, mesos.TASK_ERROR); st.GetReason() != mesos.REASON_TASK_INVALID {
					t.Errorf("%s: %v", id, st)
				}
			}
		})
	}
}

func TestReconcile(t *testing.T) {
	for _, pa := range []bool{false, true} {
		name, unknownAgent, knownAgent := "TASK_LOST", mesos.TASK_LOST, mesos.TASK_LOST
		var caps []mesos.FrameworkInfo_Capability_Type
		if pa {
			name, unknownAgent, knownAgent = "PARTITION_AWARE", mesos.TASK_UNKNOWN, mesos.TASK_GONE
			caps = append(caps, mesos.FrameworkInfo_Capability_PARTITION_AWARE)
		}
		t.Run(name, func(t *testing.T) {
			m := newMaster(t, mesostest.Config{})
			if err := m.AddAgent("a1", 2, 512, 0); err != nil {
				t.Fatal(err)
			}
			s := subscribe(t, m, protobufCodec, fwInfo("reconcile", caps...))
			s.runSleep("a1", "r1")
			s.runSleep("a1", "r2")

			s.mustCall(calls.Reconcile(calls.ReconcileTasks(map[string]string{"r1": "a1", "nope": "a1", "gone": "no-such-agent"})))
			got := map[string]mesos.TaskStatus{}
			for len(got) < 3 {
				ev := s.next("reconciliation UPDATE", isType(scheduler.Event_UPDATE))
				st := ev.GetUpdate().Status
				got[st.TaskID.Value] = st
			}
			want := map[string]mesos.TaskState{"r1": mesos.TASK_RUNNING, "nope": knownAgent, "gone": unknownAgent}
			for id, state := range want {
				st := got[id]
				if st.GetState() != state || st.GetReason() != mesos.REASON_RECONCILIATION || len(st.UUID) != 0 {
					t.Errorf("%s: %s %s uuid=%x, want %s REASON_RECONCILIATION without uuid", id, st.GetState(), st.GetReason(), st.UUID, state)
				}
			}

			// Implicit reconciliation reports every active task.
			s.mustCall(calls.Reconcile())
			implicit := map[string]mesos.TaskState{}
			for len(implicit) < 2 {
				st := s.next("implicit reconciliation UPDATE", isType(scheduler.Event_UPDATE)).GetUpdate().Status
				implicit[st.TaskID.Value] = st.GetState()
			}
			if implicit["r1"] != mesos.TASK_RUNNING || implicit["r2"] != mesos.TASK_RUNNING {
				t.Errorf("implicit reconciliation = %v", implicit)
			}
		})
	}
}

func TestStatusUpdateRetries(t *testing.T) {
	const retry = 100 * time.Millisecond
	m := newMaster(t, mesostest.Config{StatusUpdateRetryInterval: retry, StatusUpdateMaxRetryInterval: retry})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, m, protobufCodec, fwInfo("retries"))
	o := s.offer("a1")
	s.launch(o, 0, shellTask("r", o.AgentID, "sleep 30", 0.1, 32))
	first := s.expectUpdate("r", mesos.TASK_STARTING)
	// Not acknowledged: the same update (same uuid) is sent again, and
	// RUNNING is held back.
	again := s.expectUpdate("r", mesos.TASK_STARTING)
	if string(again.UUID) != string(first.UUID) {
		t.Fatalf("retried update has a new uuid")
	}
	// RUNNING, generated right after STARTING, would have arrived before
	// the retry had it not been held back.
	s.none("RUNNING before STARTING was acknowledged", func(e *scheduler.Event) bool {
		return e.Type == scheduler.Event_UPDATE && e.GetUpdate().Status.GetState() == mesos.TASK_RUNNING
	})
	// An acknowledgement with a wrong uuid changes nothing.
	s.mustCall(calls.Acknowledge("a1", "r", []byte("0123456789abcdef")))
	s.expectUpdate("r", mesos.TASK_STARTING)
	s.ack(first)
	running := s.expectUpdate("r", mesos.TASK_RUNNING)
	s.ack(running)
	waitFor(t, m, "no pending updates", func() bool {
		tk, _ := taskByID(m, "r")
		return tk.PendingUpdates == 0
	})
	// The event stream is ordered, so reconciliation replies for unknown
	// tasks serve as markers: no update for "r" may arrive between a marker
	// sent after the acknowledgement and one sent several retry intervals
	// later.
	s.marker("marker-1", "")
	waitRounds(t, m, uint64(4*retry/(50*time.Millisecond)))
	s.marker("marker-2", "r")
}

func TestRejectSubscribeWithClient(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	m.RejectSubscribe(mesostest.SubscribeRejection{StatusCode: 401, Message: "bad credentials"})
	if _, err := trySubscribe(t, m, protobufCodec, fwInfo("rejected")); err == nil {
		t.Fatal("SUBSCRIBE succeeded despite RejectSubscribe")
	} else if !strings.Contains(err.Error(), "not authenticated") {
		t.Errorf("error = %v, want mesos-go's authentication error", err)
	}
	m.RejectSubscribe(mesostest.SubscribeRejection{})
	subscribe(t, m, protobufCodec, fwInfo("accepted"))
}

func TestRescindOffers(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, m, protobufCodec, fwInfo("rescind"))
	o := s.offer("a1")
	if n := m.RescindOffers(); n != 1 {
		t.Fatalf("RescindOffers() = %d, want 1", n)
	}
	if r := s.next("RESCIND", isType(scheduler.Event_RESCIND)); r.GetRescind().OfferID != o.ID {
		t.Fatalf("RESCIND = %v", r)
	}
	o2 := s.offer("a1")
	if o2.ID == o.ID {
		t.Fatal("re-offer reused the rescinded offer ID")
	}
	if n := m.RescindOffers("unknown", o2.ID.Value); n != 1 {
		t.Fatalf("RescindOffers(ids) = %d, want 1", n)
	}
	s.next("RESCIND", isType(scheduler.Event_RESCIND))
	// A rescinded offer is invalid.
	s.launch(o, 0, shellTask("late", o.AgentID, "true", 0.1, 32))
	if st := s.expectUpdate("late", mesos.TASK_LOST); st.GetReason() != mesos.REASON_INVALID_OFFERS {
		t.Errorf("launch on rescinded offer: %v", st)
	}
}

// TestFailAcceptWithClient documents how mesos-go v0.0.11 reacts to an
// error response on a non-SUBSCRIBE call: httpsched treats every failed
// call like a lost leader and drops the subscription on the client side,
// so the framework disconnects (and, with failover_timeout 0, is removed).
func TestFailAcceptWithClient(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, m, protobufCodec, fwInfo("fail-accept"))
	o := s.offer("a1")
	m.FailAccept(http.StatusBadRequest)
	err := s.call(calls.Accept(calls.OfferOperations{calls.OpLaunch(shellTask("x", o.AgentID, "true", 0.1, 32))}.WithOffers(o.ID)))
	if err == nil || !strings.Contains(err.Error(), "malformed request") {
		t.Fatalf("ACCEPT with FailAccept(400): %v", err)
	}
	s.waitEnded()
	waitFor(t, m, "framework removed", func() bool {
		f, _ := frameworkByID(m, s.fwID)
		return f.Removed
	})
	if len(m.Tasks()) != 0 {
		t.Errorf("a failed ACCEPT launched tasks: %v", m.Tasks())
	}
}

func TestTeardown(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, m, protobufCodec, withFailover(fwInfo("teardown"), time.Hour))
	s.runSleep("a1", "t")
	s.mustCall(&scheduler.Call{Type: scheduler.Call_TEARDOWN})
	s.waitEnded()
	waitFor(t, m, "framework removed, processes killed", func() bool {
		f, _ := frameworkByID(m, s.fwID)
		return f.Removed && m.RunningProcesses() == 0
	})
}

func TestFetchURIs(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"args: $*\"\ncat data.txt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "input")
	if err := os.WriteFile(data, []byte("payload\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, m, protobufCodec, fwInfo("fetch"))
	o := s.offer("a1")
	shell := false
	exe := true
	out := "data.txt"
	task := shellTask("fetched", o.AgentID, "", 0.1, 32)
	task.Command = &mesos.CommandInfo{
		Shell:     &shell,
		Value:     strPtr("./run.sh"),
		Arguments: []string{"run.sh", "one", "two"},
		URIs: []mesos.CommandInfo_URI{
			{Value: "file://" + script, Executable: &exe},
			{Value: data, OutputFile: &out},
		},
	}
	bad := shellTask("unfetchable", o.AgentID, "true", 0.1, 32)
	bad.Command.URIs = []mesos.CommandInfo_URI{{Value: "http://example.invalid/x.tgz"}}
	s.launch(o, 0, task, bad)

	st := s.expectAck("unfetchable", mesos.TASK_FAILED)
	if st.GetReason() != mesos.REASON_CONTAINER_LAUNCH_FAILED {
		t.Errorf("unfetchable: %v", st)
	}
	s.expectAck("fetched", mesos.TASK_STARTING)
	s.expectAck("fetched", mesos.TASK_RUNNING)
	s.expectAck("fetched", mesos.TASK_FINISHED)
	tk, _ := taskByID(m, "fetched")
	got, err := os.ReadFile(filepath.Join(tk.Sandbox, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "args: one two\npayload\n" {
		t.Errorf("stdout = %q", got)
	}
	if fi, err := os.Stat(filepath.Join(tk.Sandbox, "run.sh")); err != nil || fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("fetched script not executable: %v %v", fi, err)
	}
}

func strPtr(s string) *string { return &s }

func TestLaunchGroup(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 2, 1024, 0); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, m, protobufCodec, fwInfo("group"))
	o := s.offer("a1")
	exec := mesos.ExecutorInfo{
		Type:       mesos.ExecutorInfo_DEFAULT,
		ExecutorID: mesos.ExecutorID{Value: "default-executor"},
		Resources:  []mesos.Resource{scalar("cpus", 0.1), scalar("mem", 32)},
	}
	g1 := shellTask("g1", o.AgentID, "sleep 30", 0.1, 32)
	g2 := shellTask("g2", o.AgentID, "sleep 30", 0.1, 32)
	s.mustCall(calls.Accept(calls.OfferOperations{calls.OpLaunchGroup(exec, g1, g2)}.WithOffers(o.ID)).With(calls.RefuseSeconds(0)))
	running := 0
	for running < 2 {
		st := s.next("group UPDATE", isType(scheduler.Event_UPDATE)).GetUpdate().Status
		s.ack(st)
		if st.GetState() == mesos.TASK_RUNNING {
			running++
		}
		if st.GetExecutorID().GetValue() != "default-executor" {
			t.Errorf("executor ID = %v", st.GetExecutorID())
		}
	}
	// Killing one task of a group kills the group.
	s.mustCall(calls.Kill("g1", "a1"))
	killed := map[string]bool{}
	for len(killed) < 2 {
		st := s.next("TASK_KILLED", func(e *scheduler.Event) bool {
			return e.Type == scheduler.Event_UPDATE && e.GetUpdate().Status.GetState() == mesos.TASK_KILLED
		}).GetUpdate().Status
		s.ack(st)
		killed[st.TaskID.Value] = true
	}
	waitFor(t, m, "group resources released", func() bool {
		a := m.Agents()[0]
		return a.Free.CPUs+sumOffered(m, "cpus") == 2
	})
}

func TestCloseCleansUp(t *testing.T) {
	m, err := mesostest.New(mesostest.Config{Logf: t.Logf, AllocationInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, m, protobufCodec, fwInfo("close"))
	task := s.runSleep("a1", "orphan")
	dir := m.WorkDir()
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := syscall.Kill(task.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d survived Close: %v", task.PID, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("work directory survived Close: %v", err)
	}
	s.waitEnded()
	if err := m.AddAgent("a2", 1, 1, 1); !errors.Is(err, mesostest.ErrClosed) {
		t.Errorf("AddAgent after Close = %v, want ErrClosed", err)
	}
}

func TestKillEscalation(t *testing.T) {
	m := newMaster(t, mesostest.Config{KillGracePeriod: time.Minute})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, m, protobufCodec, fwInfo("stubborn"))
	o := s.offer("a1")
	// SIGTERM is ignored by the shell and, inherited, by sleep.
	s.launch(o, 0, shellTask("stubborn", o.AgentID, "trap '' TERM; touch trapped; sleep 30", 0.1, 32))
	s.expectAck("stubborn", mesos.TASK_STARTING)
	s.expectAck("stubborn", mesos.TASK_RUNNING)
	// TASK_RUNNING means the process started, not that the shell already
	// ran the trap: wait for it to say so.
	tk, _ := taskByID(m, "stubborn")
	pollFile(t, filepath.Join(tk.Sandbox, "trapped"))

	const grace = 300 * time.Millisecond
	kill := calls.Kill("stubborn", "a1")
	kill.Kill.KillPolicy = &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: int64(grace)}}
	start := time.Now()
	s.mustCall(kill)
	st := s.expectAck("stubborn", mesos.TASK_KILLED)
	if elapsed := time.Since(start); elapsed < grace {
		t.Errorf("killed after %v, before the %v grace period", elapsed, grace)
	}
	if st.GetMessage() != "Command terminated with signal Killed" {
		t.Errorf("KILLED message = %q, want SIGKILL after the grace period", st.GetMessage())
	}
}

// pollFile waits for a file written by a task process (no master state
// change signals it, so it is polled with a deadline).
func pollFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	ticker := time.NewTicker(5 * time.Millisecond)
	defer ticker.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", path)
		}
		<-ticker.C
	}
}
