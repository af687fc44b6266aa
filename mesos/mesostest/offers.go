package mesostest

import (
	"fmt"
	"sort"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// Offer filter bounds (scheduler-http-api.md, ACCEPT: "If filters is not
// set, then the default value defined in mesos.proto will be used", i.e.
// Filters.refuse_seconds = 5; "Mesos will cap Filters.refuse_seconds at
// 31536000 seconds (365 days)").
const (
	defaultRefuse = 5 * time.Second
	maxRefuse     = 365 * 24 * time.Hour
)

// offer is an outstanding offer: all unused resources of one agent,
// allocated to one framework.
type offer struct {
	id      string
	seq     int
	fwID    string
	agentID string
	res     resources
	created time.Time
}

// offerFilter refuses resources of an agent to a framework until expires;
// like the Mesos allocator's refused-resources filter it only applies
// while the resources that could be offered are a subset of the refused
// ones, so freshly freed resources lift it.
type offerFilter struct {
	res     resources
	expires time.Time
}

// refuseDuration interprets Filters.refuse_seconds like the Mesos
// allocator: unset means 5s, negative means the default, values are capped
// at 365 days, and 0 installs no filter.
func refuseDuration(f *mesos.Filters) time.Duration {
	if f == nil || f.RefuseSeconds == nil {
		return defaultRefuse
	}
	secs := *f.RefuseSeconds
	if secs < 0 || secs != secs {
		return defaultRefuse
	}
	if secs >= maxRefuse.Seconds() {
		return maxRefuse
	}
	return time.Duration(secs * float64(time.Second))
}

func (fw *framework) addFilter(agentID string, res resources, d time.Duration, now time.Time) {
	if d <= 0 || res.isEmpty() {
		return
	}
	fw.filters[agentID] = append(fw.filters[agentID], offerFilter{res: res.clone(), expires: now.Add(d)})
}

// filtered reports whether an offer of res on agentID is refused by fw.
func (fw *framework) filtered(agentID string, res resources, now time.Time) bool {
	fs := fw.filters[agentID]
	kept := fs[:0]
	refused := false
	for _, f := range fs {
		if !now.Before(f.expires) {
			continue
		}
		kept = append(kept, f)
		if f.res.contains(res) {
			refused = true
		}
	}
	if len(kept) == 0 {
		delete(fw.filters, agentID)
	} else {
		fw.filters[agentID] = kept
	}
	return refused
}

// allocateLocked runs one allocation round: the unused resources of every
// registered agent are offered to the eligible frameworks (subscribed, not
// suppressed, not filtering those resources) in turn: the first gets all
// it may have (unreserved resources and those reserved for its role) as
// one offer, the next what is left for its role, and so on; a share below
// the minimum allocatable resources is not offered. Frameworks take turns
// across rounds. All offers for a framework made in a round are sent in
// one OFFERS event.
func (m *Master) allocateLocked(now time.Time) {
	m.rounds++
	if !m.leadingLocked(now) {
		return
	}
	var eligible []*framework
	for _, id := range m.fwOrder {
		fw := m.frameworks[id]
		if !fw.removed && fw.stream != nil && !fw.suppressed {
			eligible = append(eligible, fw)
		}
	}
	if len(eligible) == 0 {
		return
	}
	batches := make(map[*framework][]mesos.Offer)
	for _, aid := range m.agentOrder {
		a := m.agents[aid]
		if !a.connected() {
			continue
		}
		free := m.freeLocked(a)
		for i := range eligible {
			fw := eligible[(m.rrStart+i)%len(eligible)]
			share := free.forRole(fw.role)
			if !share.allocatable() || fw.filtered(aid, share, now) {
				continue
			}
			free.sub(share)
			m.nextOffer++
			o := &offer{
				id:      fmt.Sprintf("%s-O%d", m.id, m.nextOffer),
				seq:     m.nextOffer,
				fwID:    fw.id,
				agentID: aid,
				res:     share,
				created: now,
			}
			m.offers[o.id] = o
			batches[fw] = append(batches[fw], m.offerProto(o, fw, a))
		}
	}
	m.rrStart++
	for _, fw := range eligible {
		if offers := batches[fw]; len(offers) > 0 {
			m.sendLocked(fw, &scheduler.Event{
				Type:   scheduler.Event_OFFERS,
				Offers: &scheduler.Event_Offers{Offers: offers},
			})
		}
	}
}

// offerProto shows an offer to fw: with allocation_info only for MULTI_ROLE
// frameworks (MESOS-8237), with reservations in the format its
// RESERVATION_REFINEMENT capability asks for.
func (m *Master) offerProto(o *offer, fw *framework, a *agent) mesos.Offer {
	f := resourceFormat{refinement: fw.refinement}
	off := mesos.Offer{
		ID:          mesos.OfferID{Value: o.id},
		FrameworkID: mesos.FrameworkID{Value: fw.id},
		AgentID:     mesos.AgentID{Value: a.spec.ID},
		Hostname:    a.spec.Hostname,
	}
	if fw.multiRole {
		f.allocationRole = ptr(fw.role)
		off.AllocationInfo = &mesos.Resource_AllocationInfo{Role: ptr(fw.role)}
	}
	off.Resources = o.res.toMesos(f)
	return off
}

// declineLocked handles DECLINE: the offers' resources are refused to the
// framework for refuse_seconds. Unknown offers are ignored.
func (m *Master) declineLocked(fw *framework, ids []mesos.OfferID, filters *mesos.Filters) {
	d := refuseDuration(filters)
	now := time.Now()
	for _, id := range ids {
		o := m.offers[id.Value]
		if o == nil || o.fwID != fw.id {
			m.logf("mesostest: ignoring decline of offer %s since it is no longer valid", id.Value)
			continue
		}
		delete(m.offers, o.id)
		fw.addFilter(o.agentID, o.res, d, now)
	}
	// Declined resources are reconsidered in the next periodic round, not
	// right away, so a scheduler declining with refuse_seconds=0 is
	// re-offered once per AllocationInterval rather than in a hot loop.
}

// suppressLocked handles SUPPRESS: no offers until REVIVE. Outstanding
// offers are not rescinded.
func (m *Master) suppressLocked(fw *framework, roles []string) {
	if len(roles) == 0 || contains(roles, fw.role) {
		fw.suppressed = true
	}
}

// reviveLocked handles REVIVE: un-suppresses and clears all offer filters.
func (m *Master) reviveLocked(fw *framework, roles []string) {
	if len(roles) == 0 || contains(roles, fw.role) {
		fw.suppressed = false
		fw.filters = map[string][]offerFilter{}
		m.kickAllocation()
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// rescindLocked removes o and sends RESCIND to its framework. Its
// resources are re-offered later without a filter.
func (m *Master) rescindLocked(o *offer) {
	delete(m.offers, o.id)
	if fw := m.frameworks[o.fwID]; fw != nil {
		m.sendLocked(fw, &scheduler.Event{
			Type:    scheduler.Event_RESCIND,
			Rescind: &scheduler.Event_Rescind{OfferID: mesos.OfferID{Value: o.id}},
		})
	}
}

// dropFrameworkOffersLocked removes fw's offers without RESCIND events
// (used on disconnection, failover and removal, where Mesos also just
// recovers the resources).
func (m *Master) dropFrameworkOffersLocked(fw *framework) {
	for id, o := range m.offers {
		if o.fwID == fw.id {
			delete(m.offers, id)
		}
	}
}

// expireOffersLocked rescinds offers older than Config.OfferTimeout.
func (m *Master) expireOffersLocked(now time.Time) bool {
	if m.cfg.OfferTimeout <= 0 {
		return false
	}
	changed := false
	for _, o := range m.sortedOffersLocked() {
		if now.Sub(o.created) >= m.cfg.OfferTimeout {
			m.rescindLocked(o)
			changed = true
		}
	}
	return changed
}

func (m *Master) sortedOffersLocked() []*offer {
	out := make([]*offer, 0, len(m.offers))
	for _, o := range m.offers {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// RescindOffers rescinds the outstanding offers with the given IDs, or all
// outstanding offers when no ID is given, sending RESCIND events. The
// resources are offered again in a later allocation round. It returns the
// number of offers rescinded; unknown IDs are ignored.
func (m *Master) RescindOffers(ids ...string) int {
	m.mu.Lock()
	defer m.unlock()
	n := 0
	for _, o := range m.sortedOffersLocked() {
		if len(ids) == 0 || contains(ids, o.id) {
			m.rescindLocked(o)
			n++
		}
	}
	if n > 0 {
		m.kickAllocation()
	}
	return n
}

// Offer is a snapshot of an outstanding offer.
type Offer struct {
	// ID, FrameworkID and AgentID of the offer.
	ID, FrameworkID, AgentID string
	// Resources offered.
	Resources Resources
	// Created is when the offer was made.
	Created time.Time
}

func (m *Master) offersLocked() []Offer {
	sorted := m.sortedOffersLocked()
	out := make([]Offer, 0, len(sorted))
	for _, o := range sorted {
		out = append(out, Offer{ID: o.id, FrameworkID: o.fwID, AgentID: o.agentID, Resources: o.res.snapshot(), Created: o.created})
	}
	return out
}

// Offers returns a snapshot of the outstanding offers, oldest first.
func (m *Master) Offers() []Offer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offersLocked()
}
