package mesos

import (
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/sluicehq/sluice/internal/backoff"
)

// Reconciliation (docs/reconciliation.md): after every SUBSCRIBED the
// scheduler asks about each task it knows (explicit reconciliation) and
// about all of the framework's tasks (implicit), and it holds a slot's
// relaunch until the master has answered about the slot's task. Tasks
// the master does not know are reported TASK_LOST (reason
// REASON_RECONCILIATION) and relaunched; tasks the scheduler does not know
// are adopted into their slot if it is free, else killed. Unanswered
// questions are asked again with a truncated exponential backoff, as the
// reconciliation doc asks (a master that just failed over does not answer
// about tasks of agents that have not re-registered yet): after
// ReconcileRetryMin, doubling up to ReconcileRetry. The full
// reconciliation repeats every ReconcileInterval.

// reconcileDue adds the reconciliations and kill retries that are due.
func (m *machine) reconcileDue(now time.Time, out *output) {
	full := now.Sub(m.lastReconcile) >= m.cfg.reconcileInterval
	ask := map[string]string{}
	for _, t := range m.tasks {
		if t.terminal() {
			continue
		}
		if t.kill && !t.killSent.IsZero() && now.Sub(t.killSent) >= m.cfg.reconcileRetry {
			t.killSent = now
			out.kills = append(out.kills, killOp{taskID: t.id, agentID: t.agentID})
		}
		// Unconfirmed after a (re)subscription or a failed ACCEPT, or
		// launched without news for a while: ask again.
		stale := !t.confirmed || (t.state == mesos.TASK_STAGING && !t.reported)
		if full || stale && now.Sub(t.asked) >= m.askDelay(t) {
			t.asked = now
			t.asks++
			ask[t.id] = t.agentID
		}
	}
	if len(ask) > 0 {
		out.reconcile = append(out.reconcile, reconcileOp{tasks: ask})
	}
	if full {
		out.reconcile = append(out.reconcile, reconcileOp{})
		m.lastReconcile = now
	}
}

// askDelay is how long to wait for the master's answer about t before
// asking again.
func (m *machine) askDelay(t *task) time.Duration {
	return backoff.Nth(max(t.asks, 1), m.cfg.reconcileRetryMin, m.cfg.reconcileRetry)
}
