package mesos

import (
	"context"
	"errors"
	"fmt"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"

	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

// apply carries out an output: persist (always before launches; launches
// that cannot be persisted are not sent, their offers are declined), then
// the calls, only within the lease (lease.go), acknowledgements last and
// only if the state was saved, then the status. It returns an error only
// when leadership is lost.
func (t *term) apply(ctx context.Context, now time.Time, out output) error {
	m, log := t.m, t.s.log
	saved := true
	if m.dirty || len(out.launches) > 0 {
		// After a failure, Consul is not asked again for a while (the
		// loop would wait for it on every input); meanwhile nothing is
		// saved, so nothing is launched nor acknowledged.
		err := errSaveLater
		if at := time.Now(); at.Sub(t.saveFailed) >= t.lease() {
			wctx, cancel := context.WithTimeout(ctx, t.lease()/2)
			err = t.l.saveState(wctx, m.snapshot())
			cancel()
			if err == nil {
				t.confirm(at) // a fenced write: the session held the lock
				t.saveFailed = time.Time{}
			} else {
				t.saveFailed = at
			}
		}
		if errors.Is(err, ErrNotLeader) {
			return err
		}
		if err != nil {
			saved = false
			if !errors.Is(err, errSaveLater) {
				log.Error("mesos: persisting state", "err", err)
			}
			for _, op := range out.launches {
				m.launchAborted(now, op, err)
				out.declines = append(out.declines, declineOp{offerIDs: []mesos.OfferID{op.offerID}, refuse: t.s.cfg.DeclineRefuse})
			}
			out.launches = nil
		} else {
			m.dirty = false
		}
	}
	if !t.leased(time.Now()) {
		t.withhold(now, &out)
		t.s.setStatus(t.status(now))
		return nil
	}
	t.resume(&out)
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
		ops := calls.OfferOperations(op.pre)
		for _, o := range op.pre {
			log.Info("mesos: offer operation", "agent", op.agentID, "offer", op.offerID.Value, "operation", o.GetType(), "resources", describeOperation(o))
		}
		if len(op.tasks) > 0 {
			log.Info("mesos: launching", "agent", op.agentID, "offer", op.offerID.Value, "tasks", op.taskIDs())
			ops = append(ops, calls.OpLaunch(op.tasks...))
		}
		c := calls.Accept(ops.WithOffers(op.offerID)).With(calls.RefuseSeconds(op.refuse))
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
