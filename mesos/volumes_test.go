package mesos

import (
	"strings"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// volumeOffer is an offer of agent with, besides offer's resources, the
// persistent volume id (100 MB, reserved for role r) if id is not empty.
func volumeOffer(agent string, id string) mesos.Offer {
	o := offer(agent, 4, 4096, 1000)
	if id != "" {
		typ := mesos.Resource_ReservationInfo_DYNAMIC
		mode := mesos.RW
		o.Resources = append(o.Resources, mesos.Resource{Name: "disk", Type: mesos.SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: 100},
			Reservations: []mesos.Resource_ReservationInfo{{Type: &typ, Role: ptr("r"), Principal: ptr("p")}},
			Disk: &mesos.Resource_DiskInfo{Persistence: &mesos.Resource_DiskInfo_Persistence{ID: id},
				Volume: &mesos.Volume{ContainerPath: "data", Mode: &mode}}})
	}
	return o
}

func opTypes(l launchOp) []string {
	var out []string
	for _, o := range l.pre {
		out = append(out, o.GetType().String())
	}
	return out
}

// TestVolumeLifecycle: a slot's first launch reserves disk, creates its
// volume and launches on it; its relaunch waits for its agent's offer with
// the volume; a volume no slot wants is destroyed and unreserved; one a
// slot lost track of is adopted.
func TestVolumeLifecycle(t *testing.T) {
	p := pool("p", 1, 1, 128, 3)
	p.Volume = &VolumeSpec{Size: 100}
	h := newHarness(t)
	h.m.cfg.role, h.m.cfg.principal = "r", "p"
	h.m.setPools(h.now, []Pool{p})
	h.subscribe()

	out := h.offers(volumeOffer("a1", ""))
	if len(out.launches) != 1 || strings.Join(opTypes(out.launches[0]), ",") != "RESERVE,CREATE" {
		t.Fatalf("first launch = %+v, want RESERVE, CREATE, then the task", out.launches)
	}
	l := out.launches[0]
	create := l.pre[1].GetCreate().GetVolumes()[0]
	id := create.GetDisk().GetPersistence().GetID()
	if !strings.HasPrefix(id, "c1.p.0.") || create.GetScalar().GetValue() != 100 || create.Reservations[0].GetRole() != "r" ||
		create.Reservations[0].GetPrincipal() != "p" || create.GetDisk().GetVolume().GetContainerPath() != "data" {
		t.Fatalf("created volume = %v", create)
	}
	if reserve := l.pre[0].GetReserve().GetResources()[0]; reserve.GetScalar().GetValue() != 100 || reserve.Disk != nil {
		t.Errorf("reserved = %v", reserve)
	}
	ti := l.tasks[0]
	usesVolume := false
	for _, r := range ti.Resources {
		usesVolume = usesVolume || r.GetDisk().GetPersistence().GetID() == id
	}
	env := map[string]string{}
	for _, v := range ti.Command.Environment.Variables {
		env[v.Name] = v.GetValue()
	}
	if !usesVolume || env["SLUICE_DATA_DIR"] != "data" {
		t.Fatalf("task resources %v, data dir %q; want the volume", ti.Resources, env["SLUICE_DATA_DIR"])
	}
	if !h.m.dirty || h.m.snapshot().Slots[0].Volume != id {
		t.Fatal("the volume is not in the persisted state before the ACCEPT")
	}
	task1 := ti.TaskID.Value
	h.update(status(task1, "a1", mesos.TASK_RUNNING, true))
	if !h.m.slots[slotKey{"p", 0}].volume.created {
		t.Error("volume not known to exist once its task ran")
	}

	// The node crashes: the relaunch waits for a1's offer with the volume.
	h.update(status(task1, "a1", mesos.TASK_FAILED, true))
	h.advance(2 * time.Second)
	h.m.tick(h.now)
	if got := launched(h.offers(volumeOffer("a2", ""))); len(got) != 0 {
		t.Fatalf("relaunched %v on another agent", got)
	}
	if r := h.m.status(h.now).Tasks[0].Pending; !strings.Contains(r, "persistent volume "+id) || !strings.Contains(r, "agent a1") {
		t.Errorf("pending reason %q", r)
	}
	out = h.offers(volumeOffer("a1", id))
	if len(out.launches) != 1 || len(out.launches[0].pre) != 0 || len(out.launches[0].tasks) != 1 {
		t.Fatalf("relaunch = %+v, want one task, no volume operation", out.launches)
	}
	task2 := out.launches[0].tasks[0].TaskID.Value
	h.update(status(task2, "a1", mesos.TASK_RUNNING, true))

	// Scaled to zero: the volume is destroyed and its disk unreserved.
	out = h.m.setPools(h.now, []Pool{func() Pool { q := p; q.Instances = 0; return q }()})
	h.update(status(out.kills[0].taskID, "a1", mesos.TASK_KILLED, true))
	if h.m.suppressed || h.m.snapshot().Destroy[id] != "a1" {
		t.Fatalf("suppressed %v, volumes to destroy %v: offers are needed to destroy %s", h.m.suppressed, h.m.snapshot().Destroy, id)
	}
	out = h.offers(volumeOffer("a1", id))
	if len(out.launches) != 1 || strings.Join(opTypes(out.launches[0]), ",") != "DESTROY,UNRESERVE" || len(out.launches[0].tasks) != 0 {
		t.Fatalf("offer with an unwanted volume: %+v, want DESTROY, UNRESERVE", out.launches)
	}
	if un := out.launches[0].pre[1].GetUnreserve().GetResources()[0]; un.Disk != nil || un.GetScalar().GetValue() != 100 || len(un.Reservations) != 1 {
		t.Errorf("unreserved = %v", un)
	}
	if len(h.m.doomed) != 0 || !h.m.suppressed {
		t.Errorf("after the DESTROY: volumes to destroy %v, suppressed %v", h.m.doomed, h.m.suppressed)
	}

	// A volume of a wanted slot that has none is adopted.
	h.m.setPools(h.now, []Pool{p})
	out = h.offers(volumeOffer("a3", "c1.p.0.cafe"))
	if len(out.launches) != 1 || len(out.launches[0].pre) != 0 || len(out.launches[0].tasks) != 1 {
		t.Fatalf("offer with a volume to adopt: %+v, want a launch on it", out.launches)
	}
	if v := h.m.slots[slotKey{"p", 0}].volume; v == nil || v.id != "c1.p.0.cafe" || v.agentID != "a3" {
		t.Errorf("slot volume %+v", v)
	}
	// Another cluster's volume is left alone.
	o := volumeOffer("a4", "other.p.0.cafe")
	if out := h.offers(o); len(out.launches) != 0 {
		t.Fatalf("acted on another cluster's volume: %+v", out.launches)
	}
}

// TestVolumeForgottenWithItsAgent: a launch that never happened leaves no
// volume; an agent marked gone takes the volume with it.
func TestVolumeForgottenWithItsAgent(t *testing.T) {
	p := pool("p", 1, 1, 128, 3)
	p.Volume = &VolumeSpec{Size: 100}
	h := newHarness(t)
	h.m.cfg.role = "r"
	h.m.setPools(h.now, []Pool{p})
	h.subscribe()
	id := launched(h.offers(volumeOffer("a1", "")))[0]
	h.update(withReason(status(id, "a1", mesos.TASK_DROPPED, false), mesos.REASON_INVALID_OFFERS, "rescinded"))
	if v := h.m.slots[slotKey{"p", 0}].volume; v != nil {
		t.Fatalf("volume of a launch that never happened kept: %+v", v)
	}
	id = launched(h.offers(volumeOffer("a2", "")))[0]
	h.update(status(id, "a2", mesos.TASK_RUNNING, true))
	h.update(withReason(status(id, "a2", mesos.TASK_GONE_BY_OPERATOR, false), mesos.REASON_AGENT_REMOVED_BY_OPERATOR, "gone"))
	if v := h.m.slots[slotKey{"p", 0}].volume; v != nil {
		t.Fatalf("volume of a gone agent kept: %+v", v)
	}
	h.advance(2 * time.Second)
	h.m.tick(h.now)
	if out := h.offers(volumeOffer("a3", "")); len(out.launches) != 1 || len(out.launches[0].pre) != 2 {
		t.Fatalf("relaunch after the agent was gone = %+v, want a new volume", out.launches)
	}
}
