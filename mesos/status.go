package mesos

import (
	"cmp"
	"slices"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/sluicehq/sluice/mesos/mesosstatus"
)

// status reports the machine's view.
func (m *machine) status(now time.Time) mesosstatus.Status {
	st := mesosstatus.Status{FrameworkID: m.frameworkID, Subscription: m.sub, Problems: slices.Clone(m.problems)}
	st.Subscription.Suppressed = m.suppressed
	st.Subscription.HeartbeatSeconds = m.sub.Heartbeat.Seconds()
	kept := map[slotKey]*task{}
	var extras []*task
	for _, t := range m.tasks {
		if t.terminal() {
			continue
		}
		if t.kill || !m.desired(t.key) || kept[t.key] != nil {
			extras = append(extras, t)
			continue
		}
		kept[t.key] = t
	}
	for _, name := range m.order {
		ps := m.pools[name]
		pst := mesosstatus.PoolStatus{Name: name, Desired: ps.spec.Instances, Failed: ps.failed, FailedReason: ps.failedReason, FailedAt: ps.failedAt}
		for i := 0; i < ps.spec.Instances; i++ {
			k := slotKey{name, i}
			s := m.slots[k]
			if s == nil {
				s = &slot{}
			}
			pst.Restarts += s.restarts
			ts := mesosstatus.TaskStatus{Pool: name, Instance: i, Restarts: s.restarts, Failures: s.failures}
			if s.volume != nil {
				ts.Volume = s.volume.id
			}
			if t := kept[k]; t != nil {
				fillTask(&ts, t)
				switch t.state {
				case mesos.TASK_RUNNING:
					pst.Running++
				case mesos.TASK_UNREACHABLE:
					pst.Unreachable++
				default:
					pst.Starting++
				}
			} else {
				pst.Pending++
				ts.State = "PENDING"
				ts.Since = s.pendingSince
				ts.Pending = m.pendingReason(now, k, s)
				if s.last != nil {
					ts.Message = describeEnd(s.last.state, s.last.reason, s.last.message)
				}
				if !slices.Contains(pst.PendingReasons, ts.Pending) {
					pst.PendingReasons = append(pst.PendingReasons, ts.Pending)
				}
			}
			st.Tasks = append(st.Tasks, ts)
		}
		st.Pools = append(st.Pools, pst)
	}
	slices.SortFunc(extras, func(a, b *task) int { return cmp.Compare(a.id, b.id) })
	for _, t := range extras {
		ts := mesosstatus.TaskStatus{Pool: t.key.pool, Instance: t.key.index}
		fillTask(&ts, t)
		st.Tasks = append(st.Tasks, ts)
		for i := range st.Pools {
			if st.Pools[i].Name == t.key.pool {
				st.Pools[i].Killing++
			}
		}
	}
	return st
}

func fillTask(ts *mesosstatus.TaskStatus, t *task) {
	ts.ID, ts.Agent, ts.Host, ts.Ports = t.id, t.agentID, t.hostname, slices.Clone(t.ports)
	ts.State, ts.Message, ts.Since = t.state.String(), t.message, t.updated
	ts.Unconfirmed, ts.Killing = !t.confirmed, t.kill
}
