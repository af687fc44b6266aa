package mesos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"

	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

// errSkipped: a call not made because the subscription is gone.
var errSkipped = errors.New("mesos: not subscribed")

// tickInterval is how often the leader loop looks at the clock (backoff
// expiry, reconciliation and kill retries, heartbeats).
const tickInterval = 250 * time.Millisecond

// term is one leadership term: the loop that owns the machine, and the
// current subscription.
type term struct {
	s   *Scheduler
	l   *leadership
	m   *machine
	fid atomic.Value // string: the framework ID, for the subscriber

	// The current subscription attempt (set by inAttempt inputs).
	attempt   int
	caller    calls.Caller
	cancel    context.CancelFunc
	lastEvent time.Time
	heartbeat time.Duration
	// dropped says why the scheduler ended the current subscription (a
	// failed call makes httpsched drop it; missed heartbeats), for the
	// status: the subscription itself only ends with "context canceled".
	dropped error
	since   time.Time
}

// lead runs one leadership term until ctx ends, the lock is lost, or the
// state cannot be loaded. Its goroutines (subscriber, publisher, members
// watcher) are stopped and waited for before it returns.
func (s *Scheduler) lead(ctx context.Context, l *leadership, transport http.RoundTripper) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
	p, err := loadState(lctx, s.consul, s.cfg.Cluster)
	lcancel()
	if err != nil {
		s.standbyProblem(err)
		return err
	}
	now := time.Now()
	t := &term{s: s, l: l, m: newMachine(machineConfigFrom(&s.cfg), now), since: now}
	if err := t.m.restore(p); err != nil {
		s.standbyProblem(err)
		return err
	}
	t.fid.Store(t.m.frameworkID)
	s.log.Info("mesos: state loaded", "framework_id", t.m.frameworkID, "tasks", len(t.m.tasks))

	in := make(chan input)
	sub := &subscriber{
		cfg: &s.cfg, endpoints: s.endpoints, transport: transport, httpAddr: s.HTTPAddr(),
		frameworkID: func() string { return t.fid.Load().(string) },
		holds:       l.holds, in: in, log: s.log,
	}
	members := make(chan membership)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(3)
	go func() {
		defer wg.Done()
		sub.run(ctx)
	}()
	go func() {
		defer wg.Done()
		s.publish(ctx, l)
	}()
	go func() {
		defer wg.Done()
		s.watchMembers(ctx, members)
	}()

	if pools, ok := s.currentPools(); ok {
		if err := t.apply(ctx, now, t.m.setPools(now, pools)); err != nil {
			return err
		}
	}
	ticker := time.NewTicker(tickInterval)
	defer ticker.Stop()
	for {
		var out output
		select {
		case <-ctx.Done():
			return nil
		case <-l.lost:
			return fmt.Errorf("mesos: leader lock lost: %w", ErrNotLeader)
		case <-s.poolsChanged:
			now = time.Now()
			pools, _ := s.currentPools()
			out = t.m.setPools(now, pools)
		case <-ticker.C:
			now = time.Now()
			t.watchdog(now)
			out = t.m.tick(now)
		case mb := <-members:
			now = time.Now()
			out = t.m.members(now, mb)
		case i := <-in:
			now = time.Now()
			var err error
			out, err = t.input(now, i)
			if err != nil {
				return err
			}
		}
		if err := t.apply(ctx, now, out); err != nil {
			return err
		}
	}
}

// input feeds one subscriber input to the machine.
func (t *term) input(now time.Time, i input) (output, error) {
	m, log := t.m, t.s.log
	switch i.kind {
	case inAttempt:
		t.attempt, t.caller, t.cancel = i.attempt, i.caller, i.cancel
		t.lastEvent, t.heartbeat, t.dropped = now, 0, nil
		m.subscribing(now, i.endpoint)
		log.Info("mesos: subscribing", "master", i.endpoint, "framework_id", m.frameworkID, "attempt", i.attempt)
	case inEnded:
		if errors.Is(i.err, ErrNotLeader) {
			return output{}, i.err
		}
		if i.attempt == t.attempt {
			t.caller, t.cancel = nil, nil
			if t.dropped != nil && errors.Is(i.err, context.Canceled) {
				i.err = fmt.Errorf("subscription dropped after: %w", t.dropped)
			}
		}
		switch {
		case i.redirected:
			log.Info("mesos: following the leading master", "err", i.err)
			m.disconnected(now, nil)
		case i.subscribed:
			log.Warn("mesos: subscription ended", "err", i.err)
			m.disconnected(now, i.err)
		default:
			log.Warn("mesos: subscription failed", "master", i.endpoint, "err", i.err)
			m.subscribeFailed(now, i.err)
		}
	case inEvent:
		if i.attempt != t.attempt {
			return output{}, nil
		}
		t.lastEvent = now
		return t.event(now, i.ev), nil
	}
	return output{}, nil
}

// event feeds one scheduler event to the machine.
func (t *term) event(now time.Time, e *scheduler.Event) output {
	m, log := t.m, t.s.log
	switch e.GetType() {
	case scheduler.Event_SUBSCRIBED:
		sub := e.GetSubscribed()
		fid := sub.GetFrameworkID().GetValue()
		t.heartbeat = time.Duration(sub.GetHeartbeatIntervalSeconds() * float64(time.Second))
		if prev := m.frameworkID; prev != "" && prev != fid {
			log.Warn("mesos: registered as a new framework", "framework_id", fid, "previous", prev)
		}
		log.Info("mesos: subscribed", "framework_id", fid, "heartbeat", t.heartbeat)
		out := m.subscribedEvent(now, fid, t.heartbeat)
		t.fid.Store(m.frameworkID)
		return out
	case scheduler.Event_OFFERS:
		return m.offersEvent(now, e.GetOffers().Offers)
	case scheduler.Event_RESCIND:
		id := e.GetRescind().OfferID.Value
		log.Warn("mesos: offer rescinded", "offer", id)
		m.rescind(now, id)
	case scheduler.Event_UPDATE:
		st := e.GetUpdate().Status
		log.Debug("mesos: task update", "task", st.TaskID.Value, "state", st.GetState(), "reason", reasonName(st), "message", st.GetMessage())
		if isTerminal(st.GetState()) && st.GetReason() != mesos.REASON_RECONCILIATION {
			log.Info("mesos: task ended", "task", st.TaskID.Value, "state", st.GetState(), "reason", reasonName(st), "message", st.GetMessage())
		}
		return m.update(now, st)
	case scheduler.Event_FAILURE:
		f := e.GetFailure()
		if f.GetExecutorID() == nil {
			log.Warn("mesos: agent lost", "agent", f.GetAgentID().GetValue())
		}
		return m.failure(now, f.GetAgentID().GetValue(), f.GetExecutorID().GetValue())
	case scheduler.Event_ERROR:
		msg := e.GetError().Message
		log.Error("mesos: ERROR event from the master", "message", msg)
		out := m.errorEvent(now, msg)
		t.fid.Store(m.frameworkID)
		return out
	case scheduler.Event_HEARTBEAT:
	default:
		log.Debug("mesos: event ignored", "type", e.GetType())
	}
	var out output
	m.finish(now, &out)
	return out
}

// watchdog ends a subscription whose master has been silent for three
// heartbeat intervals: the connection is presumed dead, and the
// subscriber resubscribes.
func (t *term) watchdog(now time.Time) {
	if t.cancel == nil || t.heartbeat <= 0 || !t.m.subscribed {
		return
	}
	if silent := now.Sub(t.lastEvent); silent > 3*t.heartbeat+time.Second {
		err := fmt.Errorf("no event from the master for %v (heartbeat interval %v): resubscribing", silent.Round(time.Second), t.heartbeat)
		t.s.log.Warn("mesos: missed heartbeats", "err", err)
		t.m.problem(now, mesosstatus.ProblemSubscription, err.Error())
		t.dropped = err
		t.cancel()
		t.cancel = nil
	}
}

// apply carries out an output: persist (always before launches; launches
// that cannot be persisted are not sent, their offers are declined), then
// the calls, acknowledgements last and only if the state was saved, then
// the status. It returns an error only when leadership is lost.
func (t *term) apply(ctx context.Context, now time.Time, out output) error {
	m, log := t.m, t.s.log
	saved := true
	if m.dirty || len(out.launches) > 0 {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := t.l.saveState(wctx, m.snapshot())
		cancel()
		if errors.Is(err, ErrNotLeader) {
			return err
		}
		if err != nil {
			saved = false
			log.Error("mesos: persisting state", "err", err)
			for _, op := range out.launches {
				m.launchAborted(now, op, err)
				out.declines = append(out.declines, declineOp{offerIDs: []mesos.OfferID{op.offerID}, refuse: t.s.cfg.DeclineRefuse})
			}
			out.launches = nil
		} else {
			m.dirty = false
		}
	}
	fid := m.frameworkID
	// call makes a call in the current subscription. httpsched ends the
	// subscription on any failed call, so after one failure the rest are
	// skipped (errSkipped): what they would do is redone after the
	// resubscription (reconciliation, kills, REVIVE/SUPPRESS; offers are
	// withdrawn; updates are resent until acknowledged).
	call := func(c *scheduler.Call) error {
		if t.caller == nil {
			return errSkipped
		}
		c.FrameworkID = &mesos.FrameworkID{Value: fid}
		err := calls.CallNoData(ctx, t.caller, c)
		if err != nil {
			t.caller = nil
			t.dropped = fmt.Errorf("%s failed: %w", c.GetType(), err)
		}
		return err
	}
	failed := func(what string, err error) {
		if !errors.Is(err, errSkipped) && ctx.Err() == nil {
			log.Warn("mesos: call failed", "call", what, "err", err)
			m.callFailed(now, what, err)
		}
	}
	for _, op := range out.launches {
		log.Info("mesos: launching", "agent", op.agentID, "offer", op.offerID.Value, "tasks", op.taskIDs())
		c := calls.Accept(calls.OfferOperations{calls.OpLaunch(op.tasks...)}.WithOffers(op.offerID)).With(calls.RefuseSeconds(op.refuse))
		if err := call(c); err != nil {
			// Skipped or failed, the tasks may or may not exist: the
			// machine reconciles them before relaunching.
			log.Error("mesos: ACCEPT failed", "offer", op.offerID.Value, "tasks", op.taskIDs(), "err", err)
			m.launchFailed(now, op, err)
		}
	}
	for _, op := range out.declines {
		if err := call(calls.Decline(op.offerIDs...).With(calls.RefuseSeconds(op.refuse))); err != nil {
			failed("DECLINE", err)
		}
	}
	for _, op := range out.kills {
		log.Info("mesos: killing task", "task", op.taskID, "agent", op.agentID)
		if err := call(calls.Kill(op.taskID, op.agentID)); err != nil {
			failed("KILL", err)
		}
	}
	for _, op := range out.reconcile {
		log.Debug("mesos: reconciling", "tasks", len(op.tasks))
		if err := call(calls.Reconcile(calls.ReconcileTasks(op.tasks))); err != nil {
			failed("RECONCILE", err)
		}
	}
	if out.revive {
		log.Debug("mesos: reviving offers")
		if err := call(calls.Revive()); err != nil {
			failed("REVIVE", err)
		}
	}
	if out.suppress {
		log.Debug("mesos: suppressing offers")
		if err := call(calls.Suppress()); err != nil {
			failed("SUPPRESS", err)
		}
	}
	for _, a := range out.acks {
		if !saved {
			// Not acknowledged: the agent sends the update again, and it
			// is processed again once the state can be saved.
			break
		}
		if err := call(calls.Acknowledge(a.agentID, a.taskID, a.uuid)); err != nil {
			// The update is sent again; it is acknowledged then.
			failed("ACKNOWLEDGE", err)
		}
	}
	t.s.setStatus(t.status(now))
	return nil
}

// status is the leader's full status.
func (t *term) status(now time.Time) mesosstatus.Status {
	st := t.m.status(now)
	st.Cluster, st.Scheduler, st.Role, st.Master = t.s.cfg.Cluster, t.s.cfg.ID, mesosstatus.RoleLeader, t.s.cfg.Master
	st.LeaderSince, st.Updated = t.since, now
	return st
}

// publish writes the status to Consul while leading: StatusDebounce after
// a change, and every StatusInterval.
func (s *Scheduler) publish(ctx context.Context, l *leadership) {
	interval := time.NewTicker(s.cfg.StatusInterval)
	defer interval.Stop()
	var (
		last     []byte // last written, without Updated
		debounce <-chan time.Time
		failing  bool
	)
	write := func(force bool) {
		st := s.Status()
		if st.Role != mesosstatus.RoleLeader {
			return
		}
		cmp := st
		cmp.Updated = time.Time{}
		key, _ := json.Marshal(cmp)
		if !force && bytes.Equal(key, last) {
			return
		}
		b, err := marshalStatus(st)
		if err != nil {
			return
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = l.write(wctx, map[string][]byte{mesosstatus.Key(s.cfg.Cluster): b})
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			failing = true
			s.log.Warn("mesos: publishing status", "err", err)
		case err == nil:
			failing = false
			last = key
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.statusNotify:
			if debounce == nil {
				debounce = time.After(s.cfg.StatusDebounce)
			}
		case <-debounce:
			debounce = nil
			write(false)
		case <-interval.C:
			write(true)
		}
	}
}

func marshalStatus(st mesosstatus.Status) ([]byte, error) { return json.Marshal(st) }
