package mesostest_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"

	"github.com/sluicehq/sluice/mesos/mesostest"
)

// rawPost posts a SUBSCRIBE to url without following redirects and
// returns the status, the Location header and the body.
func rawPost(t *testing.T, url string) (int, string, string) {
	t.Helper()
	info := fwInfo("raw")
	call := &scheduler.Call{Type: scheduler.Call_SUBSCRIBE, Subscribe: &scheduler.Call_Subscribe{FrameworkInfo: &info}}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(encode(t, mesostest.MediaTypeProtobuf, call))))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mesostest.MediaTypeProtobuf)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, "", "" // a subscription stream: not read
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

// TestSeveralMasters: masters that do not lead redirect to the leader; a
// new leader answers 503 while it recovers, then knows the tasks of each
// agent only once the agent re-registered: until then explicit
// reconciliation of them goes unanswered, implicit reconciliation leaves
// them out and the agent is not offered.
func TestSeveralMasters(t *testing.T) {
	m := newMaster(t, mesostest.Config{Masters: 3})
	for _, id := range []string{"a1", "a2"} {
		if err := m.AddAgent(id, 1, 512, 0); err != nil {
			t.Fatal(err)
		}
	}
	urls := m.URLs()
	if len(urls) != 3 || m.Leader() != 0 {
		t.Fatalf("URLs %v, leader %d", urls, m.Leader())
	}
	endpoint := func(i int) string { return urls[i] + "/api/v1/scheduler" }
	status, loc, _ := rawPost(t, endpoint(2))
	if status != http.StatusTemporaryRedirect || loc != "//"+strings.TrimPrefix(urls[0], "http://")+"/api/v1/scheduler" {
		t.Fatalf("SUBSCRIBE at a non-leader: %d, Location %q", status, loc)
	}

	info := withFailover(fwInfo("ha", mesos.FrameworkInfo_Capability_PARTITION_AWARE), time.Hour)
	s := subscribeAt(t, m, endpoint(0), info)
	offers := map[string]mesos.Offer{}
	for len(offers) < 2 {
		for _, o := range s.offers() {
			offers[o.AgentID.Value] = o
		}
	}
	for i, a := range []string{"a1", "a2"} {
		id := "t" + string(rune('1'+i))
		s.launch(offers[a], 0, shellTask(id, offers[a].AgentID, "sleep 30", 0.1, 32))
		s.expectAck(id, mesos.TASK_STARTING)
		s.expectAck(id, mesos.TASK_RUNNING)
	}

	failedOver := time.Now() // before: the recovery is counted from inside FailOver
	if err := m.FailOver(mesostest.Failover{To: 1, Recovery: 300 * time.Millisecond, LateAgents: map[string]time.Duration{"a2": time.Hour}}); err != nil {
		t.Fatal(err)
	}
	s.waitEnded()
	if status, _, body := rawPost(t, endpoint(1)); status != http.StatusServiceUnavailable || body != "Master has not finished recovery" {
		t.Fatalf("SUBSCRIBE at the recovering leader: %d %q", status, body)
	}
	if status, loc, _ := rawPost(t, endpoint(0)); status != http.StatusTemporaryRedirect || !strings.Contains(loc, strings.TrimPrefix(urls[1], "http://")) {
		t.Fatalf("SUBSCRIBE at the old leader: %d, Location %q", status, loc)
	}
	var s2 *sched
	for s2 == nil {
		if time.Since(failedOver) > waitTimeout {
			t.Fatal("the new leader never recovered")
		}
		info.ID = &mesos.FrameworkID{Value: s.fwID}
		if c, err := trySubscribeAt(t, m, endpoint(1), protobufCodec, info); err == nil {
			s2 = c
		}
	}
	if time.Since(failedOver) < 300*time.Millisecond {
		t.Errorf("subscribed %v after the failover, before the recovery ended", time.Since(failedOver))
	}
	s2.next("SUBSCRIBED", isType(scheduler.Event_SUBSCRIBED))
	s2.fwID = s.fwID
	if a := m.Agents(); a[0].Recovering || !a[1].Recovering {
		t.Fatalf("agents = %+v, want a1 re-registered, a2 not", a)
	}
	// a2 (late) is not offered; a1 is.
	if o := s2.offers(); len(o) != 1 || o[0].AgentID.Value != "a1" {
		t.Errorf("offers = %v, want a1's only", o)
	}
	s2.mustCall(calls.Reconcile(calls.ReconcileTasks(map[string]string{"t2": "a2"})))
	s2.mustCall(calls.Reconcile())
	s2.mustCall(calls.Reconcile(calls.ReconcileTasks(map[string]string{"marker": "a1"})))
	if st := s2.expectUpdate("t1", mesos.TASK_RUNNING); st.GetReason() != mesos.REASON_RECONCILIATION {
		t.Errorf("implicit reconciliation = %v", st)
	}
	s2.expectUpdate("marker", mesos.TASK_GONE)
	s2.none("an answer about t2", func(e *scheduler.Event) bool {
		return e.Type == scheduler.Event_UPDATE && e.GetUpdate().Status.TaskID.Value == "t2"
	})

	// Without a leader every master answers 503.
	if err := m.FailOver(mesostest.Failover{To: -1}); err != nil {
		t.Fatal(err)
	}
	for i := range urls {
		if status, _, body := rawPost(t, endpoint(i)); status != http.StatusServiceUnavailable || body != "No leader elected" {
			t.Errorf("master %d without a leader: %d %q", i, status, body)
		}
	}
	// The next leader re-registers every agent; t2 is known again.
	if err := m.FailOver(mesostest.Failover{To: 2}); err != nil {
		t.Fatal(err)
	}
	s3 := subscribeAt(t, m, endpoint(2), info)
	s3.mustCall(calls.Reconcile(calls.ReconcileTasks(map[string]string{"t2": "a2"})))
	s3.expectUpdate("t2", mesos.TASK_RUNNING)
	if s3.fwID != s.fwID {
		t.Errorf("framework %s after two failovers, want %s", s3.fwID, s.fwID)
	}
	types := map[scheduler.Call_Type]bool{}
	for _, c := range m.Calls() {
		if c.FrameworkID == s.fwID {
			types[c.Type] = true
		}
	}
	if !types[scheduler.Call_SUBSCRIBE] || !types[scheduler.Call_RECONCILE] || !types[scheduler.Call_ACCEPT] {
		t.Errorf("calls logged: %v", types)
	}
}

// TestStalledAndHalfOpenSubscriptions: a stalled subscription stays
// subscribed but delivers nothing, not even heartbeats; a half-open one is
// dropped by the master (calls get 403) without the scheduler being told.
func TestStalledAndHalfOpenSubscriptions(t *testing.T) {
	m := newMaster(t, mesostest.Config{HeartbeatInterval: 50 * time.Millisecond})
	for _, halfOpen := range []bool{false, true} {
		s := subscribe(t, m, protobufCodec, withFailover(fwInfo("silent"), time.Hour))
		s.next("HEARTBEAT", isType(scheduler.Event_HEARTBEAT))
		var err error
		if halfOpen {
			err = m.DropSubscriptionSilently(s.fwID)
		} else {
			err = m.StallSubscription(s.fwID)
		}
		if err != nil {
			t.Fatal(err)
		}
		// Whatever was in flight arrives at once; then nothing, during
		// 10 allocation rounds (several heartbeat intervals).
		waitRounds(t, m, 2)
		before := s.received()
		waitRounds(t, m, 10)
		if after := s.received(); after != before {
			t.Errorf("%d events on a silent subscription", after-before)
		}
		f, _ := frameworkByID(m, s.fwID)
		callErr := s.call(calls.Revive())
		switch {
		case halfOpen && (f.Connected || callErr == nil):
			t.Errorf("half-open: framework %+v, REVIVE error %v; want disconnected and refused", f, callErr)
		case !halfOpen && (!f.Connected || callErr != nil):
			t.Errorf("stalled: framework %+v, REVIVE error %v; want connected and accepted", f, callErr)
		}
		s.disconnect()
	}
}

// TestAcceptDelay: with a delay, a task does not exist until its ACCEPT
// is applied: reconciliation right after the ACCEPT says it is gone.
func TestAcceptDelay(t *testing.T) {
	m := newMaster(t, mesostest.Config{})
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	m.SetAcceptDelay(300 * time.Millisecond)
	s := subscribe(t, m, protobufCodec, fwInfo("slow", mesos.FrameworkInfo_Capability_PARTITION_AWARE))
	o := s.offer("a1")
	s.launch(o, 0, shellTask("late", o.AgentID, "sleep 30", 0.1, 32))
	s.mustCall(calls.Reconcile(calls.ReconcileTasks(map[string]string{"late": "a1"})))
	if st := s.expectUpdate("late", mesos.TASK_GONE); st.GetReason() != mesos.REASON_RECONCILIATION {
		t.Errorf("reconciliation before the launch = %v", st)
	}
	s.expectAck("late", mesos.TASK_STARTING)
	s.expectAck("late", mesos.TASK_RUNNING)
}
