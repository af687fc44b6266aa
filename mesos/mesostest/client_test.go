package mesostest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/encoding"
	"github.com/mesos/mesos-go/api/v1/lib/encoding/codecs"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli"
	"github.com/mesos/mesos-go/api/v1/lib/httpcli/httpsched"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"

	"github.com/sluicehq/sluice/mesos/mesostest"
)

var (
	protobufCodec = codecs.ByMediaType[codecs.MediaTypeProtobuf]
	jsonCodec     = codecs.ByMediaType[codecs.MediaTypeJSON]
)

// sched is a scheduler built on mesos-go's real HTTP client: httpcli for
// transport and codecs, httpsched for the subscription state machine
// (Mesos-Stream-Id handling) and scheduler/calls to build calls.
type sched struct {
	t      *testing.T
	m      *mesostest.Master
	caller calls.Caller
	resp   mesos.Response
	fwID   string

	mu       sync.Mutex
	events   []*scheduler.Event
	consumed []bool
	low      int   // events before low are all consumed (see marker)
	err      error // set when the event stream ended
	notify   chan struct{}
	done     chan struct{}
}

// subscribe subscribes a new scheduler (or re-subscribes when info.ID is
// set) and waits for SUBSCRIBED.
func subscribe(t *testing.T, m *mesostest.Master, codec encoding.Codec, info mesos.FrameworkInfo) *sched {
	t.Helper()
	s, err := trySubscribe(t, m, codec, info)
	if err != nil {
		t.Fatalf("SUBSCRIBE: %v", err)
	}
	ev := s.next("SUBSCRIBED", func(e *scheduler.Event) bool { return true })
	if ev.Type != scheduler.Event_SUBSCRIBED {
		t.Fatalf("first event = %v (%v), want SUBSCRIBED", ev.Type, ev)
	}
	s.fwID = ev.GetSubscribed().GetFrameworkID().GetValue()
	return s
}

func trySubscribe(t *testing.T, m *mesostest.Master, codec encoding.Codec, info mesos.FrameworkInfo) (*sched, error) {
	return trySubscribeAt(t, m, m.SchedulerEndpoint(), codec, info)
}

// subscribeAt subscribes at the given scheduler endpoint (one master of
// several) and waits for SUBSCRIBED.
func subscribeAt(t *testing.T, m *mesostest.Master, endpoint string, info mesos.FrameworkInfo) *sched {
	t.Helper()
	s, err := trySubscribeAt(t, m, endpoint, protobufCodec, info)
	if err != nil {
		t.Fatalf("SUBSCRIBE at %s: %v", endpoint, err)
	}
	ev := s.next("SUBSCRIBED", func(e *scheduler.Event) bool { return true })
	if ev.Type != scheduler.Event_SUBSCRIBED {
		t.Fatalf("first event = %v (%v), want SUBSCRIBED", ev.Type, ev)
	}
	s.fwID = ev.GetSubscribed().GetFrameworkID().GetValue()
	return s
}

func trySubscribeAt(t *testing.T, m *mesostest.Master, endpoint string, codec encoding.Codec, info mesos.FrameworkInfo) (*sched, error) {
	cli := httpcli.New(
		httpcli.Endpoint(endpoint),
		httpcli.Codec(codec),
		httpcli.Do(httpcli.With(httpcli.Timeout(10*time.Second))),
	)
	// The test master never redirects. With the default settings httpsched
	// treats any failed SUBSCRIBE (e.g. 401) like a redirect to the same
	// endpoint and retries it 9 times with up to 13s backoff.
	caller := httpsched.NewCaller(cli, httpsched.MaxRedirects(0))
	resp, err := caller.Call(context.Background(), calls.Subscribe(&info))
	if err != nil {
		if resp != nil {
			resp.Close()
		}
		return nil, err
	}
	s := &sched{t: t, m: m, caller: caller, resp: resp, notify: make(chan struct{}, 1), done: make(chan struct{})}
	go s.readLoop()
	t.Cleanup(s.disconnect)
	return s, nil
}

func (s *sched) readLoop() {
	defer close(s.done)
	for {
		var ev scheduler.Event
		err := s.resp.Decode(&ev)
		s.mu.Lock()
		if err != nil {
			s.err = err
		} else {
			s.events = append(s.events, &ev)
			s.consumed = append(s.consumed, false)
		}
		s.mu.Unlock()
		select {
		case s.notify <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// disconnect closes the subscription (the scheduler goes away) and waits
// for the reader to stop.
func (s *sched) disconnect() {
	s.resp.Close()
	<-s.done
}

// next returns, and consumes, the oldest unconsumed event matching pred.
// Other events stay available to later calls.
func (s *sched) next(what string, pred func(*scheduler.Event) bool) *scheduler.Event {
	s.t.Helper()
	_, ev := s.nextIndex(what, pred)
	return ev
}

func (s *sched) nextIndex(what string, pred func(*scheduler.Event) bool) (int, *scheduler.Event) {
	s.t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		for i := s.low; i < len(s.events); i++ {
			if ev := s.events[i]; !s.consumed[i] && pred(ev) {
				s.consumed[i] = true
				s.mu.Unlock()
				return i, ev
			}
		}
		ended := s.err
		s.mu.Unlock()
		if ended != nil {
			s.t.Fatalf("waiting for %s: event stream ended: %v", what, ended)
		}
		select {
		case <-s.notify:
		case <-deadline.C:
			s.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// none asserts that no unconsumed event matches pred.
func (s *sched) none(what string, pred func(*scheduler.Event) bool) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := s.low; i < len(s.events); i++ {
		if !s.consumed[i] && pred(s.events[i]) {
			s.t.Fatalf("unexpected %s: %v", what, s.events[i])
		}
	}
}

// waitEnded waits for the event stream to end.
func (s *sched) waitEnded() {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(waitTimeout):
		s.t.Fatal("timed out waiting for the subscription to end")
	}
}

func isType(typ scheduler.Event_Type) func(*scheduler.Event) bool {
	return func(e *scheduler.Event) bool { return e.Type == typ }
}

func (s *sched) offers() []mesos.Offer {
	s.t.Helper()
	return s.next("OFFERS", isType(scheduler.Event_OFFERS)).GetOffers().Offers
}

// offer returns the next offer, of the given agent if agentID != "".
func (s *sched) offer(agentID string) mesos.Offer {
	s.t.Helper()
	ev := s.next("offer for agent "+agentID, func(e *scheduler.Event) bool {
		if e.Type != scheduler.Event_OFFERS {
			return false
		}
		for _, o := range e.GetOffers().Offers {
			if agentID == "" || o.AgentID.Value == agentID {
				return true
			}
		}
		return false
	})
	for _, o := range ev.GetOffers().Offers {
		if agentID == "" || o.AgentID.Value == agentID {
			return o
		}
	}
	panic("unreachable")
}

// update returns the next UPDATE for taskID (of any state).
func (s *sched) update(taskID string) mesos.TaskStatus {
	s.t.Helper()
	return s.next("UPDATE for "+taskID, func(e *scheduler.Event) bool {
		return e.Type == scheduler.Event_UPDATE && e.GetUpdate().Status.TaskID.Value == taskID
	}).GetUpdate().Status
}

// expectUpdate returns the next UPDATE for taskID, which must be in state.
func (s *sched) expectUpdate(taskID string, state mesos.TaskState) mesos.TaskStatus {
	s.t.Helper()
	st := s.update(taskID)
	if st.GetState() != state {
		s.t.Fatalf("task %s: got %s (%s, %s), want %s", taskID, st.GetState(), st.GetReason(), st.GetMessage(), state)
	}
	return st
}

// call sends a call for the framework; the Mesos-Stream-Id header is added
// by httpsched.
func (s *sched) call(c *scheduler.Call) error {
	c.FrameworkID = &mesos.FrameworkID{Value: s.fwID}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	return calls.CallNoData(ctx, s.caller, c)
}

func (s *sched) mustCall(c *scheduler.Call) {
	s.t.Helper()
	if err := s.call(c); err != nil {
		s.t.Fatalf("%s call: %v", c.Type, err)
	}
}

func (s *sched) ack(st mesos.TaskStatus) {
	s.t.Helper()
	if len(st.UUID) == 0 {
		s.t.Fatalf("status %s of task %s has no uuid", st.GetState(), st.TaskID.Value)
	}
	s.mustCall(calls.Acknowledge(st.GetAgentID().GetValue(), st.TaskID.Value, st.UUID))
}

// expectAck waits for an update in state, checks that it must be
// acknowledged, and acknowledges it.
func (s *sched) expectAck(taskID string, state mesos.TaskState) mesos.TaskStatus {
	s.t.Helper()
	st := s.expectUpdate(taskID, state)
	s.ack(st)
	return st
}

func (s *sched) launch(o mesos.Offer, refuse time.Duration, tasks ...mesos.TaskInfo) {
	s.t.Helper()
	s.mustCall(calls.Accept(calls.OfferOperations{calls.OpLaunch(tasks...)}.WithOffers(o.ID)).With(calls.RefuseSeconds(refuse)))
}

// runSleep launches "sleep 30" as taskID on the next offer of agentID and
// acknowledges its STARTING and RUNNING updates.
func (s *sched) runSleep(agentID, taskID string) mesostest.Task {
	s.t.Helper()
	o := s.offer(agentID)
	s.launch(o, 0, shellTask(taskID, o.AgentID, "sleep 30", 0.1, 32))
	s.expectAck(taskID, mesos.TASK_STARTING)
	s.expectAck(taskID, mesos.TASK_RUNNING)
	t, ok := taskByID(s.m, taskID)
	if !ok || !t.ProcessRunning || t.PID == 0 {
		s.t.Fatalf("task %s: %+v, want a running process", taskID, t)
	}
	return t
}

func fwInfo(name string, caps ...mesos.FrameworkInfo_Capability_Type) mesos.FrameworkInfo {
	info := mesos.FrameworkInfo{User: "test", Name: name}
	for _, c := range caps {
		info.Capabilities = append(info.Capabilities, mesos.FrameworkInfo_Capability{Type: c})
	}
	return info
}

func withFailover(info mesos.FrameworkInfo, d time.Duration) mesos.FrameworkInfo {
	secs := d.Seconds()
	info.FailoverTimeout = &secs
	return info
}

func codecName(c encoding.Codec) string { return fmt.Sprint(c.Type) }

// marker reconciles an unknown task and waits for the reply, which the
// master sends after every event it queued before. Everything received
// before the marker is then considered consumed. If forbidden is not
// empty, an unconsumed UPDATE for that task before the marker fails the
// test.
func (s *sched) marker(id, forbidden string) {
	s.t.Helper()
	s.mustCall(calls.Reconcile(calls.ReconcileTasks(map[string]string{id: ""})))
	i, _ := s.nextIndex("marker "+id, func(e *scheduler.Event) bool {
		return e.Type == scheduler.Event_UPDATE && e.GetUpdate().Status.TaskID.Value == id
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	for j := s.low; j < i; j++ {
		if ev := s.events[j]; !s.consumed[j] && ev.Type == scheduler.Event_UPDATE && forbidden != "" &&
			ev.GetUpdate().Status.TaskID.Value == forbidden {
			s.t.Fatalf("unexpected UPDATE before marker %s: %v", id, ev.GetUpdate().Status)
		}
	}
	s.low = i + 1
}

// received returns the number of events received so far.
func (s *sched) received() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}
