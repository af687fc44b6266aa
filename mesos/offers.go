package mesos

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// Offer handling: fitting pending slots into offers, spreading a pool's
// tasks across agents, declining the rest with a refuse filter, and
// remembering recent offers to explain why a slot is pending.
//
// Amounts are fixed point in thousandths, as Mesos keeps them, so that
// sums of offered and taken resources are exact.

// res is an amount of the resources a task asks for: scalars in
// thousandths, ports as a count.
type res struct{ cpus, mem, disk, gpus, ports int64 }

func fixed(v float64) int64   { return int64(math.Round(v * 1000)) }
func unfixed(v int64) float64 { return float64(v) / 1000 }
func (r res) fits(need res) bool {
	return r.cpus >= need.cpus && r.mem >= need.mem && r.disk >= need.disk && r.gpus >= need.gpus && r.ports >= need.ports
}

func needOf(p *Pool) res {
	return res{fixed(p.CPUs), fixed(p.Mem), fixed(p.Disk), fixed(p.GPUs), nodePorts}
}

// usable reports whether a task may take from r: an unshared,
// non-revocable scalar cpus, mem, gpus or plain disk (not a volume or
// mount), or ports ranges.
func usable(r *mesos.Resource) bool {
	if r.Revocable != nil || r.Shared != nil {
		return false
	}
	if r.Name == "ports" {
		return r.GetType() == mesos.RANGES && r.Ranges != nil
	}
	if r.GetType() != mesos.SCALAR || r.Scalar == nil {
		return false
	}
	switch r.Name {
	case "cpus", "mem", "gpus":
		return true
	case "disk":
		return r.Disk == nil || (r.Disk.Persistence == nil && r.Disk.Volume == nil && r.Disk.Source == nil)
	}
	return false
}

// offerSpace is an offer being filled: what is left of each usable
// resource.
type offerSpace struct {
	offer mesos.Offer
	avail []int64   // scalars, per offer.Resources index; 0 for others
	ports []portSet // ports, per offer.Resources index
	// volumes are this cluster's persistent volumes in the offer that
	// slots may use (persistence ID → index), used those taken.
	volumes map[string]int
	used    map[int]bool
	// pre are the operations before LAUNCH (volumes.go).
	pre []mesos.Offer_Operation
}

func newOfferSpace(o mesos.Offer) *offerSpace {
	s := &offerSpace{offer: o, avail: make([]int64, len(o.Resources)), ports: make([]portSet, len(o.Resources)),
		volumes: map[string]int{}, used: map[int]bool{}}
	for i := range o.Resources {
		r := &o.Resources[i]
		switch {
		case !usable(r):
		case r.Name == "ports":
			s.ports[i] = portsOf(r)
		case r.Scalar.Value > 0:
			s.avail[i] = fixed(r.Scalar.Value)
		}
	}
	return s
}

func (s *offerSpace) left() res {
	var t res
	for i, v := range s.avail {
		switch s.offer.Resources[i].Name {
		case "cpus":
			t.cpus += v
		case "mem":
			t.mem += v
		case "disk":
			t.disk += v
		case "gpus":
			t.gpus += v
		}
	}
	for _, p := range s.ports {
		t.ports += p.count()
	}
	return t
}

// take removes need from the offer and returns the task's resources:
// copies of the offered resources (role, reservations and allocation info
// included, as the master requires) with the amounts taken, and the ports
// taken, lowest first. Reserved resources are taken before unreserved
// ones. The caller checked fits.
func (s *offerSpace) take(need res) ([]mesos.Resource, []uint64) {
	var out []mesos.Resource
	for _, want := range []struct {
		name string
		n    int64
	}{{"cpus", need.cpus}, {"mem", need.mem}, {"disk", need.disk}, {"gpus", need.gpus}} {
		left := want.n
		for _, reserved := range []bool{true, false} {
			for i := range s.offer.Resources {
				r := &s.offer.Resources[i]
				if left == 0 || r.Name != want.name || s.avail[i] == 0 || isReserved(r) != reserved {
					continue
				}
				n := min(left, s.avail[i])
				s.avail[i] -= n
				left -= n
				c := *r
				c.Scalar = &mesos.Value_Scalar{Value: unfixed(n)}
				out = append(out, c)
			}
		}
	}
	var ports []uint64
	for _, reserved := range []bool{true, false} {
		for i := range s.offer.Resources {
			r := &s.offer.Resources[i]
			left := need.ports - int64(len(ports))
			if left == 0 || r.Name != "ports" || len(s.ports[i]) == 0 || isReserved(r) != reserved {
				continue
			}
			got := s.ports[i].take(min(left, s.ports[i].count()))
			ports = append(ports, got...)
			c := *r
			c.Ranges = rangesOf(got)
			out = append(out, c)
		}
	}
	return out, ports
}

// unreservedDisk is the plain unreserved disk left.
func (s *offerSpace) unreservedDisk() int64 {
	var n int64
	for i, v := range s.avail {
		if r := &s.offer.Resources[i]; r.Name == "disk" && !isReserved(r) {
			n += v
		}
	}
	return n
}

// takeUnreservedDisk removes n of plain unreserved disk (n ≤
// unreservedDisk) and returns it as one resource, with the offer's
// allocation info.
func (s *offerSpace) takeUnreservedDisk(n int64) mesos.Resource {
	var out mesos.Resource
	left := n
	for i := range s.offer.Resources {
		r := &s.offer.Resources[i]
		if left == 0 || r.Name != "disk" || isReserved(r) || s.avail[i] == 0 {
			continue
		}
		if out.Name == "" {
			out = *r
		}
		take := min(left, s.avail[i])
		s.avail[i] -= take
		left -= take
	}
	out.Scalar = &mesos.Value_Scalar{Value: unfixed(n)}
	return out
}

func isReserved(r *mesos.Resource) bool {
	return len(r.Reservations) > 0 || r.Reservation != nil || (r.Role != nil && *r.Role != "*" && *r.Role != "")
}

// offersEvent handles OFFERS: pending slots are placed, in pool order, on
// the offer that fits and whose agent runs the fewest tasks of the pool
// (spreading); offers with tasks are accepted, the others declined. The
// refuse filter is short (DeclineRefuse) while slots stay pending, long
// (IdleRefuse) otherwise.
//
// Spreading is best effort: it balances across the offers of one event
// (the master offers every agent's free resources in one allocation
// round) and across the agents already running tasks of the pool; it
// never leaves a slot pending to wait for another agent.
func (m *machine) offersEvent(now time.Time, offers []mesos.Offer) output {
	var out output
	spaces := make([]*offerSpace, 0, len(offers))
	for _, o := range offers {
		m.agents[o.AgentID.Value] = o.Hostname
		s := newOfferSpace(o)
		m.offers.add(offerSample{at: now, agentID: o.AgentID.Value, res: s.left()})
		spaces = append(spaces, s)
	}
	m.offers.prune(now.Add(-m.cfg.pendingWindow))
	m.scanVolumes(spaces)

	// load[pool][agent] counts the pool's live tasks per agent.
	load := map[string]map[string]int{}
	for _, t := range m.tasks {
		if !t.terminal() && !t.kill {
			if load[t.key.pool] == nil {
				load[t.key.pool] = map[string]int{}
			}
			load[t.key.pool][t.agentID]++
		}
	}
	placed := make([][]mesos.TaskInfo, len(spaces))
	for _, k := range m.pendingSlots(now) {
		ps := m.pools[k.pool]
		need := needOf(&ps.spec)
		best := -1
		for i, s := range spaces {
			if !s.left().fits(need) || !m.volumeFits(k, &ps.spec, s, need) {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			// Keep GPU agents for tasks that need GPUs, then spread.
			a, b := spaces[i].offer.AgentID.Value, spaces[best].offer.AgentID.Value
			wasteA, wasteB := need.gpus == 0 && spaces[i].left().gpus > 0, need.gpus == 0 && spaces[best].left().gpus > 0
			if wasteA != wasteB {
				if wasteB {
					best = i
				}
				continue
			}
			if c := cmp.Compare(load[k.pool][a], load[k.pool][b]); c < 0 || c == 0 && a < b {
				best = i
			}
		}
		if best < 0 {
			continue
		}
		s := spaces[best]
		t := m.newTask(now, k, s.offer)
		resources, ports := s.take(need)
		if ps.spec.Volume != nil {
			resources = append(resources, m.attachVolume(k, &ps.spec, s))
		}
		t.ports = ports
		placed[best] = append(placed[best], m.taskInfo(t, &ps.spec, resources))
		if load[k.pool] == nil {
			load[k.pool] = map[string]int{}
		}
		load[k.pool][t.agentID]++
	}

	refuse := m.cfg.idleRefuse
	if len(m.pendingSlots(now)) > 0 {
		refuse = m.cfg.declineRefuse
	}
	var decline []mesos.OfferID
	for i, s := range spaces {
		if len(placed[i]) == 0 && len(s.pre) == 0 {
			decline = append(decline, s.offer.ID)
			continue
		}
		out.launches = append(out.launches, launchOp{offerID: s.offer.ID, agentID: s.offer.AgentID.Value, pre: s.pre, tasks: placed[i], refuse: refuse})
		m.dirty = true
	}
	if len(decline) > 0 {
		out.declines = append(out.declines, declineOp{offerIDs: decline, refuse: refuse})
	}
	if len(spaces) > 0 {
		m.declined = true
	}
	m.finish(now, &out)
	return out
}

// offerSample is what an offer held when it arrived.
type offerSample struct {
	at      time.Time
	agentID string
	res     res
}

// offerHistory remembers recent offers, oldest first, at most max.
type offerHistory struct {
	max     int
	samples []offerSample
}

func (h *offerHistory) add(s offerSample) {
	if len(h.samples) >= h.max {
		h.samples = slices.Delete(h.samples, 0, len(h.samples)-h.max+1)
	}
	h.samples = append(h.samples, s)
}

func (h *offerHistory) prune(before time.Time) {
	i := 0
	for i < len(h.samples) && h.samples[i].at.Before(before) {
		i++
	}
	h.samples = slices.Delete(h.samples, 0, i)
}

func (h *offerHistory) since(t time.Time) []offerSample {
	i, _ := slices.BinarySearchFunc(h.samples, t, func(s offerSample, t time.Time) int { return s.at.Compare(t) })
	return h.samples[i:]
}

// pendingReason explains why slot k has no task, e.g. "no offer with 8
// cpus seen in 60 s; largest offer: 4 cpus".
func (m *machine) pendingReason(now time.Time, k slotKey, s *slot) string {
	ps := m.pools[k.pool]
	switch {
	case ps == nil:
		return "pool removed"
	case ps.failed:
		return "deployment failed: " + ps.failedReason
	case !m.subscribed:
		r := "not subscribed to the Mesos master"
		if m.sub.LastError != "" {
			r += " (last error: " + m.sub.LastError + ")"
		}
		return r
	case now.Before(s.nextLaunch):
		return fmt.Sprintf("relaunch backoff until %s after %d failure(s); last: %s",
			s.nextLaunch.UTC().Format(time.RFC3339), s.failures, s.lastReason)
	case m.memberReason(k) != "":
		return m.memberReason(k)
	case m.volumeReason(k) != "":
		return m.volumeReason(k)
	}
	from := now.Add(-m.cfg.pendingWindow)
	if m.start.After(from) {
		from = m.start
	}
	secs := int(now.Sub(from).Round(time.Second) / time.Second)
	samples := m.offers.since(from)
	if len(samples) == 0 {
		return fmt.Sprintf("no offers received in %d s", secs)
	}
	need := needOf(&ps.spec)
	var largest res
	for _, o := range samples {
		if o.res.fits(need) {
			return fmt.Sprintf("waiting for an offer: offers that fit were seen in the last %d s but taken by other tasks", secs)
		}
		largest.cpus = max(largest.cpus, o.res.cpus)
		largest.mem = max(largest.mem, o.res.mem)
		largest.disk = max(largest.disk, o.res.disk)
	}
	var want, have []string
	add := func(n, l int64, unit string) {
		want = append(want, amount(n, unit))
		have = append(have, amount(l, unit))
	}
	largestPorts, largestGPUs := int64(0), int64(0)
	for _, o := range samples {
		largestPorts, largestGPUs = max(largestPorts, o.res.ports), max(largestGPUs, o.res.gpus)
	}
	if largest.cpus < need.cpus {
		add(need.cpus, largest.cpus, "cpus")
	}
	if largest.mem < need.mem {
		add(need.mem, largest.mem, "MB mem")
	}
	if largest.disk < need.disk {
		add(need.disk, largest.disk, "MB disk")
	}
	if largestGPUs < need.gpus {
		add(need.gpus, largestGPUs, "gpus")
	}
	if largestPorts < need.ports {
		want = append(want, strconv.FormatInt(need.ports, 10)+" ports")
		have = append(have, strconv.FormatInt(largestPorts, 10)+" ports")
	}
	if len(want) > 0 {
		return fmt.Sprintf("no offer with %s seen in %d s; largest offer: %s", strings.Join(want, ", "), secs, strings.Join(have, ", "))
	}
	return fmt.Sprintf("no offer with %s, %s, %s and %d ports together seen in %d s (each is offered, on different agents)",
		amount(need.cpus, "cpus"), amount(need.mem, "MB mem"), amount(need.disk, "MB disk"), need.ports, secs)
}

func amount(v int64, unit string) string {
	return strconv.FormatFloat(unfixed(v), 'f', -1, 64) + " " + unit
}
