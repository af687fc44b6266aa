package mesos

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

// The leader's lease. Holding the Consul lock is only known by asking
// Consul. While Consul cannot be reached the lock may be gone (the session
// expired) and a successor may act already; the master fences a deposed
// leader only once the successor subscribes. So the leader makes calls to
// the master only within a lease: for lease() (SessionTTL/2) after Consul
// last confirmed that its session holds the lock, by a consistent read
// (keepLease, every lease()/4) or a fenced write of its state. A
// successor cannot act earlier: the session cannot expire before it was
// last confirmed, and then LockDelay (at least lease(), checked by
// Config.Validate) keeps the lock from being taken.
//
// Outside its lease the leader sends nothing: no DECLINE, KILL, RECONCILE,
// REVIVE, SUPPRESS (ACCEPT and ACKNOWLEDGE already need its state
// persisted, which confirms the lease). What it withheld is done once the
// lease is confirmed again (withheld). Without a confirmation for
// 2×SessionTTL it steps down: its session is gone by then.

// leaseCheck is the result of one confirmation of the lock.
type leaseCheck struct {
	at   time.Time // when the read was sent
	lost bool      // another session holds the lock
}

func (t *term) lease() time.Duration { return t.s.cfg.SessionTTL / 2 }

// leased reports whether calls to the master may be made at now.
func (t *term) leased(now time.Time) bool { return now.Sub(t.confirmed) < t.lease() }

// confirm extends the lease to a confirmation sent at at.
func (t *term) confirm(at time.Time) {
	if at.After(t.confirmed) {
		t.confirmed = at
	}
}

// checkLease steps down when the lease has not been confirmed for
// 2×SessionTTL.
func (t *term) checkLease(now time.Time) error {
	if d := now.Sub(t.confirmed); d > 2*t.s.cfg.SessionTTL {
		return fmt.Errorf("mesos: leadership not confirmed by Consul for %v: %w", d.Round(time.Second), ErrNotLeader)
	}
	return nil
}

// keepLease confirms the lock every lease()/4 until ctx ends, sending the
// results to out.
func (s *Scheduler) keepLease(ctx context.Context, l *leadership, out chan<- leaseCheck) {
	period := s.cfg.SessionTTL / 8
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		at := time.Now()
		rctx, cancel := context.WithTimeout(ctx, period)
		ok, err := l.holds(rctx)
		cancel()
		if err != nil {
			continue // the lease ages
		}
		select {
		case out <- leaseCheck{at: at, lost: !ok}:
		case <-ctx.Done():
			return
		}
	}
}

// withhold drops the calls of out, made outside the lease, and makes the
// machine do them again later: kills and reconciliations are repeated,
// REVIVE and SUPPRESS decided again, declines kept for later.
func (t *term) withhold(now time.Time, out *output) {
	m := t.m
	if !t.withholding {
		t.withholding = true
		msg := fmt.Sprintf("leadership not confirmed by Consul for %v: no calls to the master until it is", now.Sub(t.confirmed).Round(time.Millisecond))
		t.s.log.Warn("mesos: " + msg)
		m.problem(now, mesosstatus.ProblemConsul, msg)
	}
	for _, op := range out.declines {
		t.heldDeclines = append(t.heldDeclines, op.offerIDs...)
	}
	for _, op := range out.kills {
		if tk := m.tasks[op.taskID]; tk != nil {
			tk.killSent = time.Time{}
		}
	}
	for _, op := range out.reconcile {
		if len(op.tasks) == 0 {
			m.lastReconcile = time.Time{}
		}
		for id := range op.tasks {
			if tk := m.tasks[id]; tk != nil {
				tk.asked, tk.asks = time.Time{}, max(tk.asks-1, 0)
			}
		}
	}
	if out.revive {
		m.declined, m.wasPending = true, nil
	}
	if out.suppress {
		m.suppressed = false
	}
	out.declines, out.kills, out.reconcile, out.revive, out.suppress, out.acks = nil, nil, nil, false, false, nil
}

// resume ends a withholding: the declines kept are sent with out.
func (t *term) resume(out *output) {
	if !t.withholding {
		return
	}
	t.withholding = false
	t.s.log.Info("mesos: leadership confirmed by Consul again")
	if len(t.heldDeclines) > 0 {
		out.declines = append(out.declines, declineOp{offerIDs: t.heldDeclines, refuse: t.s.cfg.DeclineRefuse})
		t.heldDeclines = nil
	}
}
