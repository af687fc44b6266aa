package mesos

import (
	"context"
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

// errSaveLater: the state was not saved because saving it failed a moment
// ago.
var errSaveLater = errors.New("mesos: state not saved: Consul failed a moment ago")

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

	// confirmed is when Consul last confirmed the lock (lease.go);
	// withholding is set while calls are withheld outside the lease, and
	// heldDeclines are the offers to decline when it is confirmed again.
	confirmed    time.Time
	withholding  bool
	heldDeclines []mesos.OfferID
	// contact is when a master last sent an event (or the term began).
	contact time.Time
	// saveFailed is when saving the state last failed.
	saveFailed time.Time
}

// lead runs one leadership term until ctx ends, the lock is lost (or no
// longer confirmed), or the state cannot be loaded. Its goroutines
// (subscriber, publisher, members watcher, lease keeper) are stopped and
// waited for before it returns.
func (s *Scheduler) lead(ctx context.Context, l *leadership, transport http.RoundTripper) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
	p, err := loadState(lctx, s.consul, s.cfg.Cluster)
	lcancel()
	if err != nil {
		s.standbyProblem(mesosstatus.ProblemConsul, err)
		return err
	}
	now := time.Now()
	// The lock was just acquired and read back: the lease starts now.
	t := &term{s: s, l: l, m: newMachine(machineConfigFrom(&s.cfg), now), since: now, confirmed: now, contact: now}
	if err := t.m.restore(p); err != nil {
		s.standbyProblem(mesosstatus.ProblemConsul, err)
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
	leases := make(chan leaseCheck)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	s.adoptTargets(t.m.liveSlots())
	wg.Add(5)
	go func() {
		defer wg.Done()
		s.scaleNodes(ctx)
	}()
	go func() {
		defer wg.Done()
		s.keepLease(ctx, l, leases)
	}()
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
			if err := t.checkLease(now); err != nil {
				return err
			}
			if err := t.checkMaster(now); err != nil {
				return err
			}
			t.watchdog(now)
			out = t.m.tick(now)
		case c := <-leases:
			now = time.Now()
			if c.lost {
				return fmt.Errorf("mesos: leader lock held by another session: %w", ErrNotLeader)
			}
			t.confirm(c.at)
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
		t.lastEvent, t.contact = now, now
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

// checkMaster steps down when no master has been subscribed to for
// MasterTimeout: another scheduler may reach one.
func (t *term) checkMaster(now time.Time) error {
	if t.m.subscribed {
		return nil
	}
	if d := now.Sub(t.contact); d > t.s.cfg.MasterTimeout {
		return fmt.Errorf("mesos: no subscription to a master for %v (last error: %s): %w", d.Round(time.Second), t.m.sub.LastError, ErrNoMaster)
	}
	return nil
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
