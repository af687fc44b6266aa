package mesos

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"
)

// Persistent volumes (docs/persistent-volume.md). A pool with a Volume
// keeps each instance's node data (SLUICE_DATA_DIR) on a persistent volume
// on the agent where the instance first ran, so that a node relaunched
// there (after a crash, a kill, an agent restart) finds its Pebble data.
//
//   - First launch of a slot: an offer with enough unreserved disk is
//     accepted with RESERVE (the volume's disk, for the framework's role
//     and principal), CREATE (the volume, persistence ID
//     "<cluster>.<pool>.<instance>.<random>", at Volume.Path in the
//     sandbox) and LAUNCH (the task, using the volume), in that order. The
//     slot remembers the volume and its agent (persisted in Consul) before
//     the ACCEPT is sent.
//   - Relaunch: only on an offer of that agent that holds the volume
//     (reserved resources are offered to the role only). The slot waits
//     for one; its pending reason says so.
//   - A volume is known to exist once a task using it started or an offer
//     showed it. If the launch that was to create it never happened, the
//     slot forgets it (were it created after all, it shows up in an offer
//     and is adopted or destroyed, below).
//   - A volume of the cluster in an offer that no slot remembers is
//     adopted by its slot if that slot is wanted and has none, else
//     DESTROYed and its disk UNRESERVEd: scaling down or removing a pool
//     gives the disk back once its tasks are gone.
//   - When the volume's agent is gone for good (TASK_GONE_BY_OPERATOR,
//     TASK_UNKNOWN), the slot forgets the volume and starts afresh
//     elsewhere: the data went with the agent.
//
// The volume only makes a restart faster: a node's state is recovered from
// the other nodes or from its checkpoints (docs/mesos.md).

// slotVolume is the persistent volume of a slot.
type slotVolume struct {
	id      string // persistence ID
	agentID string
	created bool // known to exist
}

// newVolumeID returns "<cluster>.<pool>.<instance>.<8 hex digits>".
func newVolumeID(cluster string, k slotKey) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return cluster + "." + k.pool + "." + strconv.Itoa(k.index) + "." + hex.EncodeToString(b[:])
}

// volumeSlot returns the slot of a volume of this cluster, false for
// volumes of others.
func (m *machine) volumeSlot(id string) (slotKey, bool) {
	rest, ok := strings.CutPrefix(id, m.cfg.cluster+".")
	if !ok {
		return slotKey{}, false
	}
	return parseTaskID(rest)
}

// isVolume reports whether r is a persistent volume.
func isVolume(r *mesos.Resource) bool { return r.GetDisk().GetPersistence() != nil }

// scanVolumes looks at the volumes of this cluster in the offers: those a
// slot remembers become usable (and known to exist), unknown ones are
// adopted by their slot or destroyed.
func (m *machine) scanVolumes(spaces []*offerSpace) {
	for _, s := range spaces {
		for i := range s.offer.Resources {
			r := &s.offer.Resources[i]
			if !isVolume(r) {
				continue
			}
			id := r.Disk.Persistence.ID
			k, ours := m.volumeSlot(id)
			if !ours {
				continue
			}
			sl := m.slots[k]
			ps := m.pools[k.pool]
			switch {
			case sl != nil && sl.volume != nil && sl.volume.id == id:
				if !sl.volume.created {
					sl.volume.created = true
					m.dirty = true
				}
				s.volumes[id] = i
			case sl != nil && sl.volume == nil && m.desired(k) && ps.spec.Volume != nil && m.liveTask(k) == nil:
				sl.volume = &slotVolume{id: id, agentID: s.offer.AgentID.Value, created: true}
				m.dirty = true
				s.volumes[id] = i
			default:
				m.destroyVolume(s, i)
				if _, ok := m.doomed[id]; ok {
					delete(m.doomed, id)
					m.dirty = true
				}
			}
		}
	}
}

// destroyVolume adds DESTROY and UNRESERVE of the volume at index i to the
// offer's operations.
func (m *machine) destroyVolume(s *offerSpace, i int) {
	vol := s.offer.Resources[i]
	disk := vol
	disk.Disk = nil
	s.pre = append(s.pre, calls.OpDestroy(vol), calls.OpUnreserve(disk))
}

// volumeFits reports whether slot k, whose pool has a Volume, can be
// launched on s: its volume is in the offer, or it has none and the offer
// has the unreserved disk for one (besides what need takes).
func (m *machine) volumeFits(k slotKey, spec *Pool, s *offerSpace, need res) bool {
	if spec.Volume == nil {
		return true
	}
	if v := m.slots[k].volume; v != nil {
		i, ok := s.volumes[v.id]
		return ok && !s.used[i]
	}
	return s.unreservedDisk() >= need.disk+fixed(spec.Volume.Size)
}

// attachVolume returns the volume resource of slot k's task on s, after
// adding RESERVE and CREATE to the offer's operations if the slot has no
// volume yet (then it records the new one). The caller checked
// volumeFits.
func (m *machine) attachVolume(k slotKey, spec *Pool, s *offerSpace) mesos.Resource {
	sl := m.slots[k]
	if v := sl.volume; v != nil {
		i := s.volumes[v.id]
		s.used[i] = true
		return s.offer.Resources[i]
	}
	disk := s.takeUnreservedDisk(fixed(spec.Volume.Size))
	typ := mesos.Resource_ReservationInfo_DYNAMIC
	ri := mesos.Resource_ReservationInfo{Type: &typ, Role: ptr(m.cfg.role)}
	if m.cfg.principal != "" {
		ri.Principal = ptr(m.cfg.principal)
	}
	disk.Role, disk.Reservation = nil, nil
	disk.Reservations = []mesos.Resource_ReservationInfo{ri}
	id := newVolumeID(m.cfg.cluster, k)
	vol := disk
	mode := mesos.RW
	vol.Disk = &mesos.Resource_DiskInfo{
		Persistence: &mesos.Resource_DiskInfo_Persistence{ID: id},
		Volume:      &mesos.Volume{ContainerPath: spec.Volume.path(), Mode: &mode},
	}
	if m.cfg.principal != "" {
		vol.Disk.Persistence.Principal = ptr(m.cfg.principal)
	}
	s.pre = append(s.pre, calls.OpReserve(disk), calls.OpCreate(vol))
	sl.volume = &slotVolume{id: id, agentID: s.offer.AgentID.Value}
	m.dirty = true
	return vol
}

// volumeReason explains why slot k, which waits for its volume, has no
// task, or "".
func (m *machine) volumeReason(k slotKey) string {
	sl := m.slots[k]
	if sl == nil || sl.volume == nil || m.pools[k.pool] == nil || m.pools[k.pool].spec.Volume == nil {
		return ""
	}
	return "waiting for an offer from agent " + sl.volume.agentID + " with the instance's persistent volume " + sl.volume.id
}

// volumeEnded updates slot k's volume when its task t ended: a launch
// that never happened leaves no volume it was to create; an agent gone for
// good takes its volumes with it.
func (m *machine) volumeEnded(t *task, state mesos.TaskState, kind endKind) {
	sl := m.slots[t.key]
	if sl == nil || sl.volume == nil || sl.volume.agentID != t.agentID {
		return
	}
	switch {
	case kind == endNotLaunched && !sl.volume.created,
		state == mesos.TASK_GONE_BY_OPERATOR, state == mesos.TASK_UNKNOWN:
		sl.volume = nil
		m.dirty = true
	}
}

// volumeStarted records that t's volume exists: t started with it.
func (m *machine) volumeStarted(t *task) {
	if sl := m.slots[t.key]; sl != nil && sl.volume != nil && !sl.volume.created && sl.volume.agentID == t.agentID {
		sl.volume.created = true
		m.dirty = true
	}
}

// describeOperation names the volumes of a volume operation, for logs.
func describeOperation(o mesos.Offer_Operation) string {
	var rs []mesos.Resource
	switch o.GetType() {
	case mesos.Offer_Operation_RESERVE:
		rs = o.GetReserve().GetResources()
	case mesos.Offer_Operation_UNRESERVE:
		rs = o.GetUnreserve().GetResources()
	case mesos.Offer_Operation_CREATE:
		rs = o.GetCreate().GetVolumes()
	case mesos.Offer_Operation_DESTROY:
		rs = o.GetDestroy().GetVolumes()
	}
	var parts []string
	for _, r := range rs {
		p := r.Name + ":" + strconv.FormatFloat(r.GetScalar().GetValue(), 'f', -1, 64)
		if id := r.GetDisk().GetPersistence().GetID(); id != "" {
			p += "[" + id + "]"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ";")
}

// forgetSlot deletes slot k, which is no longer wanted and has no live
// task; its volume is to be destroyed when its agent offers it.
func (m *machine) forgetSlot(k slotKey) {
	if sl := m.slots[k]; sl != nil && sl.volume != nil {
		m.doomed[sl.volume.id] = sl.volume.agentID
		m.dirty = true
	}
	delete(m.slots, k)
}
