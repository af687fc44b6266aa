package mesostest

import (
	"fmt"
	"net"
	"strconv"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// framework is a registered (or removed) scheduler.
type framework struct {
	id   string
	info mesos.FrameworkInfo
	// role is the single role the test master offers resources to: the
	// first of FrameworkInfo.roles for MULTI_ROLE frameworks, else
	// FrameworkInfo.role (default "*").
	role           string
	partitionAware bool
	killingState   bool
	multiRole      bool
	refinement     bool // RESERVATION_REFINEMENT

	stream           *stream // nil while disconnected
	failoverDeadline time.Time
	suppressed       bool
	removed          bool
	removedReason    string
	filters          map[string][]offerFilter // by agent ID
}

func (fw *framework) setInfo(info mesos.FrameworkInfo, suppressedRoles []string) {
	fw.info = info
	fw.role = info.GetRole()
	if fw.role == "" {
		fw.role = "*"
	}
	fw.partitionAware, fw.killingState, fw.multiRole, fw.refinement = false, false, false, false
	for _, c := range info.Capabilities {
		switch c.Type {
		case mesos.FrameworkInfo_Capability_PARTITION_AWARE:
			fw.partitionAware = true
		case mesos.FrameworkInfo_Capability_TASK_KILLING_STATE:
			fw.killingState = true
		case mesos.FrameworkInfo_Capability_MULTI_ROLE:
			fw.multiRole = true
		case mesos.FrameworkInfo_Capability_RESERVATION_REFINEMENT:
			fw.refinement = true
		}
	}
	if fw.multiRole && len(info.Roles) > 0 {
		fw.role = info.Roles[0]
	}
	fw.suppressed = false
	for _, r := range suppressedRoles {
		if r == fw.role {
			fw.suppressed = true
		}
	}
}

// failoverTimeout returns FrameworkInfo.failover_timeout (default 0).
func (fw *framework) failoverTimeout() time.Duration {
	secs := fw.info.GetFailoverTimeout()
	if secs <= 0 {
		return 0
	}
	return time.Duration(secs * float64(time.Second))
}

// subscribeLocked registers or fails over a framework on stream s. It
// returns a non-empty refusal message when the subscription must be
// answered with an ERROR event instead.
//
// Semantics (scheduler-http-api.md "SUBSCRIBE" and "Disconnections";
// Master::subscribe in src/master/master.cpp):
//   - no framework ID: a new framework with a freshly assigned ID;
//   - the ID of a removed framework: ERROR "Framework has been removed";
//   - a known ID: the framework fails over to the new connection; if the
//     old connection is still open it receives ERROR "Framework failed
//     over" and is closed. Since MESOS-4712 the master always does this,
//     whatever the (since removed) subscribe.force field says;
//   - an ID unknown to this master: accepted with that ID, as a Mesos
//     master does after its own failover.
//
// In every case outstanding offers of the framework are dropped (they are
// regenerated after SUBSCRIBED) and pending status updates are resent.
func (m *Master) subscribeLocked(sub *scheduler.Call_Subscribe, s *stream) (*framework, string) {
	info := *sub.FrameworkInfo
	var fw *framework
	if id := info.GetID().GetValue(); id != "" {
		fw = m.frameworks[id]
		if fw != nil && fw.removed {
			return nil, "Framework has been removed"
		}
		if fw == nil {
			fw = &framework{id: id, filters: map[string][]offerFilter{}}
			m.frameworks[id] = fw
			m.fwOrder = append(m.fwOrder, id)
			m.logf("mesostest: framework %s (%s) subscribed with an ID unknown to this master", id, info.Name)
		} else {
			if fw.stream != nil {
				m.logf("mesostest: framework %s failed over to a new subscription", id)
				m.sendLocked(fw, errorEvent("Framework failed over"))
				fw.stream.close()
			} else {
				m.logf("mesostest: framework %s re-subscribed", id)
			}
			m.dropFrameworkOffersLocked(fw)
		}
	} else {
		id := fmt.Sprintf("%s-%04d", m.id, m.nextFwSeq)
		m.nextFwSeq++
		info.ID = &mesos.FrameworkID{Value: id}
		fw = &framework{id: id, filters: map[string][]offerFilter{}}
		m.frameworks[id] = fw
		m.fwOrder = append(m.fwOrder, id)
		m.logf("mesostest: framework %s (%s) subscribed", id, info.Name)
	}
	fw.setInfo(info, sub.SuppressedRoles)
	fw.stream = s
	fw.failoverDeadline = time.Time{}

	hb := m.cfg.HeartbeatInterval.Seconds()
	m.sendLocked(fw, &scheduler.Event{
		Type: scheduler.Event_SUBSCRIBED,
		Subscribed: &scheduler.Event_Subscribed{
			FrameworkID:              &mesos.FrameworkID{Value: fw.id},
			HeartbeatIntervalSeconds: &hb,
			MasterInfo:               m.masterInfo(),
		},
	})
	m.resendPendingUpdatesLocked(fw)
	m.kickAllocation()
	return fw, ""
}

// masterInfo describes this master as in SUBSCRIBED.master_info.
func (m *Master) masterInfo() *mesos.MasterInfo {
	addr := m.masters[max(m.leader, 0)].ln.Addr().String()
	host, portStr, _ := net.SplitHostPort(addr)
	port64, _ := strconv.ParseUint(portStr, 10, 32)
	port := uint32(port64)
	var ip uint32
	if v4 := net.ParseIP(host).To4(); v4 != nil {
		// MasterInfo.ip is the IPv4 address in network byte order as read
		// by a little-endian host, like Mesos' net::IP::in().s_addr.
		ip = uint32(v4[0]) | uint32(v4[1])<<8 | uint32(v4[2])<<16 | uint32(v4[3])<<24
	}
	version := "1.11.0"
	pid := "master@" + addr
	return &mesos.MasterInfo{
		ID:       m.id,
		IP:       ip,
		Port:     &port,
		PID:      &pid,
		Hostname: &host,
		Version:  &version,
		Address:  &mesos.Address{Hostname: &host, IP: &host, Port: int32(port)},
	}
}

// streamEnded is called by the handler goroutine when the subscription
// response ends. If s is still fw's current stream the framework is now
// disconnected.
func (m *Master) streamEnded(fw *framework, s *stream) {
	m.mu.Lock()
	defer m.unlock()
	if fw.stream != s || m.closed {
		return
	}
	m.disconnectLocked(fw)
}

// disconnectLocked disconnects fw from its stream: its offers are dropped
// and its failover timeout starts; a zero failover timeout removes it at
// once.
func (m *Master) disconnectLocked(fw *framework) {
	fw.stream = nil
	m.dropFrameworkOffersLocked(fw)
	timeout := fw.failoverTimeout()
	if timeout <= 0 {
		m.logf("mesostest: framework %s disconnected with failover_timeout 0; removing it", fw.id)
		m.removeFrameworkLocked(fw, "failover timeout expired")
		return
	}
	fw.failoverDeadline = time.Now().Add(timeout)
	m.logf("mesostest: framework %s disconnected; failover timeout %v", fw.id, timeout)
}

// expireFrameworksLocked removes disconnected frameworks whose failover
// timeout has elapsed.
func (m *Master) expireFrameworksLocked(now time.Time) bool {
	changed := false
	for _, id := range m.fwOrder {
		fw := m.frameworks[id]
		if fw.removed || fw.stream != nil || fw.failoverDeadline.IsZero() || now.Before(fw.failoverDeadline) {
			continue
		}
		m.logf("mesostest: framework %s failover timeout expired; removing it", fw.id)
		m.removeFrameworkLocked(fw, "failover timeout expired")
		changed = true
	}
	return changed
}

// removeFrameworkLocked tears fw down (TEARDOWN or failover timeout): its
// subscription is closed, its offers are dropped and its tasks are killed.
// No further events are sent to it.
func (m *Master) removeFrameworkLocked(fw *framework, reason string) {
	if fw.removed {
		return
	}
	fw.removed = true
	fw.removedReason = reason
	fw.failoverDeadline = time.Time{}
	m.dropFrameworkOffersLocked(fw)
	if fw.stream != nil {
		fw.stream.close()
		fw.stream = nil
	}
	for key, t := range m.tasks {
		if t.fwID != fw.id {
			continue
		}
		t.orphaned = true
		t.pending = nil
		if t.terminal {
			delete(m.tasks, key)
			continue
		}
		m.forceKillLocked(t, "framework removed")
	}
	m.kickAllocation()
}

// updateFrameworkLocked applies an UPDATE_FRAMEWORK call.
func (m *Master) updateFrameworkLocked(fw *framework, u *scheduler.Call_UpdateFramework) {
	info := u.FrameworkInfo
	info.ID = &mesos.FrameworkID{Value: fw.id}
	wasSuppressed := fw.suppressed
	fw.setInfo(info, u.SuppressedRoles)
	if wasSuppressed && !fw.suppressed {
		fw.filters = map[string][]offerFilter{}
	}
	m.kickAllocation()
}

// Framework is a snapshot of a framework known to the master.
type Framework struct {
	// ID is the framework ID.
	ID string
	// Name is FrameworkInfo.name.
	Name string
	// Role is the role offers are allocated to.
	Role string
	// Connected reports whether a subscription stream is open.
	Connected bool
	// StreamID is the Mesos-Stream-Id of the open subscription, if any.
	StreamID string
	// FailoverDeadline is when a disconnected framework will be removed;
	// zero while connected or removed.
	FailoverDeadline time.Time
	// Suppressed reports whether offers are suppressed (SUPPRESS).
	Suppressed bool
	// PartitionAware reports the PARTITION_AWARE capability.
	PartitionAware bool
	// Removed reports whether the framework was torn down (TEARDOWN or
	// failover timeout).
	Removed bool
	// RemovedReason says why a removed framework was removed.
	RemovedReason string
}

func (m *Master) frameworksLocked() []Framework {
	out := make([]Framework, 0, len(m.fwOrder))
	for _, id := range m.fwOrder {
		fw := m.frameworks[id]
		f := Framework{
			ID:               fw.id,
			Name:             fw.info.Name,
			Role:             fw.role,
			Connected:        fw.stream != nil,
			FailoverDeadline: fw.failoverDeadline,
			Suppressed:       fw.suppressed,
			PartitionAware:   fw.partitionAware,
			Removed:          fw.removed,
			RemovedReason:    fw.removedReason,
		}
		if fw.stream != nil {
			f.StreamID = fw.stream.id
		}
		out = append(out, f)
	}
	return out
}

// Frameworks returns a snapshot of all frameworks, in first-subscription
// order, including removed ones.
func (m *Master) Frameworks() []Framework {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.frameworksLocked()
}

// SubscribeRejection configures how SUBSCRIBE calls are refused. The zero
// value accepts subscriptions.
type SubscribeRejection struct {
	// StatusCode, if non-zero, answers SUBSCRIBE with this HTTP status and
	// Message as the body (e.g. http.StatusUnauthorized, which is what a
	// master with HTTP framework authentication returns to a scheduler
	// with bad credentials; a WWW-Authenticate header is added for 401).
	StatusCode int
	// Message, when StatusCode is zero, makes SUBSCRIBE answer 200 with a
	// stream holding a single ERROR event with this message, which is then
	// closed: what Mesos does for invalid or unauthorized FrameworkInfo
	// (e.g. "Framework is not authorized"). When StatusCode is set it is
	// the response body (default: the status text).
	Message string
}

// RejectSubscribe makes subsequent SUBSCRIBE calls fail as described by r
// until it is called again with the zero SubscribeRejection. Existing
// subscriptions are not affected.
func (m *Master) RejectSubscribe(r SubscribeRejection) {
	m.mu.Lock()
	defer m.unlock()
	m.subReject = r
}

// FailAccept makes subsequent ACCEPT calls (from any framework) answer
// with the given HTTP status (e.g. 400 or 403) and have no effect; the
// offers remain outstanding. FailAccept(0) restores normal handling.
// Note that mesos-go's httpsched client treats 403 as loss of the
// subscription and disconnects.
func (m *Master) FailAccept(status int) {
	m.mu.Lock()
	defer m.unlock()
	m.acceptFail = status
}
