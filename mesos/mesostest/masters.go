package mesostest

import (
	"fmt"
	"net"
	"net/http"
	"time"
)

// A Mesos HA setup runs several masters; ZooKeeper elects the leader. The
// test master simulates it with one shared state and several HTTP
// listeners (Config.Masters), following Master::Http::scheduler and
// Master::Http::redirect (src/master/http.cpp):
//
//   - a master that does not lead answers every scheduler call with 307
//     Temporary Redirect, Location "//<leader host>:<port><request path>",
//     or 503 "No leader elected" when no leader is known;
//   - a newly elected leader answers 503 "Master has not finished recovery"
//     until it has recovered its registry (Failover.Recovery);
//   - the new leader knows the agents from the registry, but not their
//     tasks until each agent re-registers (Failover.LateAgents): explicit
//     reconciliation of those tasks gets no answer, implicit
//     reconciliation leaves them out, their status updates wait and the
//     agents are not offered.
//
// Frameworks lose their subscription when the leader changes (its
// connections close) and must subscribe again, at the new leader.

// masterProc is one master of the HA setup: its listener and HTTP server.
type masterProc struct {
	id  string
	ln  net.Listener
	srv *http.Server
	url string
}

// URLs returns the base URLs of the masters, in order
// ("http://127.0.0.1:<port>").
func (m *Master) URLs() []string {
	out := make([]string, len(m.masters))
	for i, p := range m.masters {
		out[i] = p.url
	}
	return out
}

// Leader returns the index (in URLs) of the leading master, or -1 while
// none is elected.
func (m *Master) Leader() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leader
}

// Failover describes a change of leading master.
type Failover struct {
	// To is the index (in URLs) of the new leader; -1 leaves the masters
	// without a leader (every master answers 503 "No leader elected")
	// until the next FailOver.
	To int
	// Recovery is how long the new leader answers 503 "Master has not
	// finished recovery".
	Recovery time.Duration
	// LateAgents delays the re-registration of agents: agent ID → how
	// long after recovery it re-registers. Other registered agents
	// re-register as soon as recovery ends.
	LateAgents map[string]time.Duration
}

// FailOver changes the leading master as a ZooKeeper election would after
// the leader died: every subscription is closed (frameworks are
// disconnected, their failover timeouts start), outstanding offers and
// ACCEPTs still being processed are dropped, and registered agents must
// re-register with the new leader. Task processes keep running.
func (m *Master) FailOver(f Failover) error {
	m.mu.Lock()
	defer m.unlock()
	if m.closed {
		return ErrClosed
	}
	if f.To < -1 || f.To >= len(m.masters) {
		return fmt.Errorf("mesostest: failing over to master %d: there are %d masters", f.To, len(m.masters))
	}
	now := time.Now()
	m.logf("mesostest: master failover: leader %d -> %d (recovery %v)", m.leader, f.To, f.Recovery)
	for _, fw := range m.frameworks {
		if fw.stream != nil {
			fw.stream.close()
			m.disconnectLocked(fw)
		}
	}
	for id := range m.offers {
		delete(m.offers, id)
	}
	m.pendingAccepts = nil
	m.leader = f.To
	if f.To >= 0 {
		m.id = m.masters[f.To].id
	}
	m.recoveredAt = now.Add(f.Recovery)
	for _, a := range m.agents {
		if a.state == agentRegistered || a.state == agentRecovering {
			a.state = agentRecovering
			a.reregisterAt = m.recoveredAt.Add(f.LateAgents[a.spec.ID])
		}
	}
	return nil
}

// leadingLocked reports whether the master accepts calls: a leader is
// elected and has recovered.
func (m *Master) leadingLocked(now time.Time) bool {
	return m.leader >= 0 && !now.Before(m.recoveredAt)
}

// notLeading answers a call sent to master i if it must not handle it: a
// redirect to the leader, or 503. It returns false if i leads and has
// recovered.
func (m *Master) notLeading(i int, w http.ResponseWriter, r *http.Request) bool {
	m.mu.Lock()
	leader, recovered := m.leader, !time.Now().Before(m.recoveredAt)
	m.mu.Unlock()
	switch {
	case leader < 0:
		writeError(w, &httpError{http.StatusServiceUnavailable, "No leader elected"})
	case leader != i:
		// A protocol-relative URL: the client keeps its scheme.
		w.Header().Set("Location", "//"+m.masters[leader].ln.Addr().String()+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	case !recovered:
		writeError(w, &httpError{http.StatusServiceUnavailable, "Master has not finished recovery"})
	default:
		return false
	}
	return true
}

// recoverDueLocked re-registers the recovering agents that are due: their
// tasks are known again and their waiting updates are delivered.
func (m *Master) recoverDueLocked(now time.Time) bool {
	if !m.leadingLocked(now) {
		return false
	}
	changed := false
	for _, id := range m.agentOrder {
		a := m.agents[id]
		if a.state != agentRecovering || now.Before(a.reregisterAt) {
			continue
		}
		a.state = agentRegistered
		changed = true
		m.logf("mesostest: agent %s re-registered with the new leader", id)
		for _, t := range m.activeTasksLocked() {
			if t.agentID == id && len(t.pending) > 0 {
				t.retryDelay = m.cfg.StatusUpdateRetryInterval
				m.deliverHeadLocked(t, now)
			}
		}
		m.kickAllocation()
	}
	return changed
}
