package mesostest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"

	"github.com/sluicehq/sluice/mesos/mesostest"
)

func portsRes(ports ...uint64) mesos.Resource {
	r := mesos.Resource{Name: "ports", Type: mesos.RANGES.Enum(), Ranges: &mesos.Value_Ranges{}}
	for _, p := range ports {
		r.Ranges.Range = append(r.Ranges.Range, mesos.Value_Range{Begin: p, End: p})
	}
	return r
}

func offeredPorts(o mesos.Offer) []uint64 {
	var out []uint64
	for _, r := range o.Resources {
		if r.Name == "ports" {
			for _, rg := range r.GetRanges().GetRange() {
				for p := rg.Begin; p <= rg.End; p++ {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// listenerTask runs the test binary as a helper listening on addrs.
func listenerTask(t *testing.T, id string, agentID mesos.AgentID, addrs []string, res ...mesos.Resource) mesos.TaskInfo {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	shell := false
	env := strings.Join(addrs, ",")
	return mesos.TaskInfo{
		Name: "listener " + id, TaskID: mesos.TaskID{Value: id}, AgentID: agentID,
		Command: &mesos.CommandInfo{Value: &exe, Shell: &shell, Arguments: []string{exe},
			Environment: &mesos.Environment{Variables: []mesos.Environment_Variable{{Name: helperListen, Value: &env}}}},
		Resources: append([]mesos.Resource{scalar("cpus", 0.1), scalar("mem", 32)}, res...),
	}
}

// TestPortsOffered: an agent's port ranges are offered; a task may only
// claim offered ports, and (with the ports isolator) may only listen on
// the ports it was given.
func TestPortsOffered(t *testing.T) {
	free, err := mesostest.FreePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	m := newMaster(t, mesostest.Config{EnforcePorts: true, Agents: []mesostest.AgentSpec{
		{ID: "a1", Hostname: "127.0.0.1", CPUs: 2, Mem: 1024, Ports: free}}})
	s := subscribe(t, m, protobufCodec, fwInfo("ports"))
	o := s.offer("a1")
	ports := offeredPorts(o)
	if len(ports) != 4 {
		t.Fatalf("offered ports %v, want the 4 of %v", ports, free)
	}
	outside := ports[3] + 1
	for slices.Contains(ports, outside) {
		outside++
	}
	addr := func(p uint64) string { return fmt.Sprintf("127.0.0.1:%d", p) }
	s.launch(o, 0,
		// Claims a port that is not offered.
		listenerTask(t, "greedy", o.AgentID, nil, portsRes(ports[0], outside)),
		// Listens on its two ports.
		listenerTask(t, "good", o.AgentID, []string{addr(ports[0]), addr(ports[1])}, portsRes(ports[0], ports[1])),
		// Listens on a port it was not given.
		listenerTask(t, "stray", o.AgentID, []string{addr(ports[3])}, portsRes(ports[2])),
	)
	if st := s.expectUpdate("greedy", mesos.TASK_ERROR); !strings.Contains(st.GetMessage(), "more than available") {
		t.Errorf("greedy = %v", st)
	}
	s.expectAck("good", mesos.TASK_STARTING)
	s.expectAck("good", mesos.TASK_RUNNING)
	s.expectAck("stray", mesos.TASK_STARTING)
	s.expectAck("stray", mesos.TASK_RUNNING)
	st := s.expectAck("stray", mesos.TASK_FAILED)
	want := fmt.Sprintf("is listening on unallocated port(s): [%d-%d]", ports[3], ports[3])
	if st.GetReason() != mesos.REASON_CONTAINER_LIMITATION || !strings.Contains(st.GetMessage(), want) {
		t.Errorf("stray = %v, want REASON_CONTAINER_LIMITATION and %q", st, want)
	}
	// The good one keeps running: its ports are in use, not offered.
	waitRounds(t, m, 3)
	var got []uint64
	tk, _ := taskByID(m, "good")
	for _, r := range tk.Resources.Ports {
		for p := r.Begin; p <= r.End; p++ {
			got = append(got, p)
		}
	}
	if !tk.ProcessRunning || !slices.Equal(got, ports[:2]) {
		t.Errorf("good = %+v, want running with ports %v", tk, ports[:2])
	}
	for _, off := range m.Offers() {
		for _, r := range off.Resources.Ports {
			if r.Begin <= ports[1] && ports[0] <= r.End {
				t.Errorf("ports of a running task offered: %v", off.Resources.Ports)
			}
		}
	}
}

// TestReservationsAndVolumes: a MULTI_ROLE framework reserves resources
// and creates a persistent volume; a task writes into it; the next task
// (launched from the reserved resources, which only the role is offered)
// reads what the first wrote; DESTROY and UNRESERVE give everything back.
// Resources without allocation_info get the offer's; resources allocated
// to another role, or claiming a reservation that does not exist, fail.
func TestReservationsAndVolumes(t *testing.T) {
	m := newMaster(t, mesostest.Config{Agents: []mesostest.AgentSpec{{ID: "a1", CPUs: 1, Mem: 512, Disk: 1000}}})
	info := fwInfo("stateful", mesos.FrameworkInfo_Capability_MULTI_ROLE, mesos.FrameworkInfo_Capability_RESERVATION_REFINEMENT)
	info.Roles = []string{"sluice"}
	info.Principal = ptr("p1")
	s := subscribe(t, m, protobufCodec, info)
	o := s.offer("a1")
	if o.GetAllocationInfo().GetRole() != "sluice" || o.Resources[0].GetAllocationInfo().GetRole() != "sluice" {
		t.Fatalf("offer not allocated to the role: %v", o)
	}
	dyn := mesos.Resource_ReservationInfo_DYNAMIC
	reserved := func(r mesos.Resource) mesos.Resource {
		r.Reservations = []mesos.Resource_ReservationInfo{{Type: &dyn, Role: ptr("sluice"), Principal: ptr("p1")}}
		r.AllocationInfo = &mesos.Resource_AllocationInfo{Role: ptr("sluice")}
		return r
	}
	mode := mesos.RW
	volume := reserved(scalar("disk", 100))
	volume.Disk = &mesos.Resource_DiskInfo{Persistence: &mesos.Resource_DiskInfo_Persistence{ID: "vol-1"},
		Volume: &mesos.Volume{ContainerPath: "data", Mode: &mode}}
	taskRes := []mesos.Resource{reserved(scalar("cpus", 0.5)), reserved(scalar("mem", 128)), volume}
	writer := shellTask("writer", o.AgentID, "echo hello > data/greeting", 0, 0)
	writer.Resources = taskRes
	s.mustCall(calls.Accept(calls.OfferOperations{
		calls.OpReserve(reserved(scalar("cpus", 0.5)), reserved(scalar("mem", 128)), reserved(scalar("disk", 100))),
		calls.OpCreate(volume),
		calls.OpLaunch(writer),
	}.WithOffers(o.ID)).With(calls.RefuseSeconds(0)))
	s.expectAck("writer", mesos.TASK_STARTING)
	s.expectAck("writer", mesos.TASK_RUNNING)
	s.expectAck("writer", mesos.TASK_FINISHED)
	a := m.Agents()[0]
	if len(a.Volumes) != 1 || a.Volumes[0].ID != "vol-1" || a.Volumes[0].Size != 100 || a.Volumes[0].Role != "sluice" {
		t.Fatalf("volumes = %+v", a.Volumes)
	}
	if b, err := os.ReadFile(filepath.Join(a.Volumes[0].Dir, "greeting")); err != nil || string(b) != "hello\n" {
		t.Fatalf("volume content %q, %v", b, err)
	}

	// The reserved resources and the volume come back in an offer.
	var o2 mesos.Offer
	for o2.ID.Value == "" {
		for _, off := range s.offers() {
			if offerScalar(off, "cpus") == 1 && slices.ContainsFunc(off.Resources, func(r mesos.Resource) bool {
				return r.GetDisk().GetPersistence().GetID() == "vol-1"
			}) {
				o2 = off
			} else {
				s.mustCall(calls.Decline(off.ID).With(calls.RefuseSeconds(0)))
			}
		}
	}
	reader := shellTask("reader", o2.AgentID, "cat data/greeting", 0, 0)
	reader.Resources = []mesos.Resource{reserved(scalar("cpus", 0.5)), volume}
	reader.Resources[0].AllocationInfo = nil // the master adds the offer's
	wrongRole := shellTask("wrong-role", o2.AgentID, "true", 0, 0)
	wrongRole.Resources = []mesos.Resource{scalar("mem", 32)}
	wrongRole.Resources[0].AllocationInfo = &mesos.Resource_AllocationInfo{Role: ptr("other")}
	unreserved := shellTask("unreserved", o2.AgentID, "true", 0, 0)
	unreserved.Resources = []mesos.Resource{scalar("cpus", 0.6)} // only 0.5 unreserved cpus are left
	s.launch(o2, 0, reader, wrongRole, unreserved)
	if st := s.expectUpdate("wrong-role", mesos.TASK_ERROR); !strings.Contains(st.GetMessage(), "allocated to role 'other'") {
		t.Errorf("wrong role = %v", st)
	}
	if st := s.expectUpdate("unreserved", mesos.TASK_ERROR); !strings.Contains(st.GetMessage(), "more than available") {
		t.Errorf("unreserved = %v", st)
	}
	s.expectAck("reader", mesos.TASK_STARTING)
	s.expectAck("reader", mesos.TASK_RUNNING)
	s.expectAck("reader", mesos.TASK_FINISHED)
	tk, _ := taskByID(m, "reader")
	if out, _ := os.ReadFile(filepath.Join(tk.Sandbox, "stdout")); string(out) != "hello\n" || !slices.Equal(tk.Volumes, []string{"vol-1"}) {
		t.Errorf("reader: stdout %q, volumes %v", out, tk.Volumes)
	}

	// DESTROY and UNRESERVE.
	var o3 mesos.Offer
	for o3.ID.Value == "" {
		for _, off := range s.offers() {
			if offerScalar(off, "disk") == 1000 {
				o3 = off
			} else {
				s.mustCall(calls.Decline(off.ID).With(calls.RefuseSeconds(0)))
			}
		}
	}
	s.mustCall(calls.Accept(calls.OfferOperations{
		calls.OpDestroy(volume),
		calls.OpUnreserve(reserved(scalar("cpus", 0.5)), reserved(scalar("mem", 128)), reserved(scalar("disk", 100))),
	}.WithOffers(o3.ID)).With(calls.RefuseSeconds(0)))
	waitFor(t, m, "the volume destroyed and everything unreserved", func() bool {
		a := m.Agents()[0]
		return len(a.Volumes) == 0 && a.Total.Disk == 1000
	})
	if _, err := os.Stat(a.Volumes[0].Dir); !os.IsNotExist(err) {
		t.Errorf("volume directory after DESTROY: %v", err)
	}
	for o4 := s.offers(); ; o4 = s.offers() {
		if len(o4) == 1 && offerScalar(o4[0], "cpus") == 1 {
			for _, r := range o4[0].Resources {
				if len(r.Reservations) > 0 {
					t.Fatalf("still reserved: %v", r)
				}
			}
			break
		}
		for _, off := range o4 {
			s.mustCall(calls.Decline(off.ID).With(calls.RefuseSeconds(0)))
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestStrictAllocationInfo: a MULTI_ROLE framework that drops the
// allocation_info it was offered fails its launch on a strict master;
// Mesos (and the default master) would give it the offer's.
func TestStrictAllocationInfo(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprint("strict=", strict), func(t *testing.T) {
			m := newMaster(t, mesostest.Config{StrictAllocationInfo: strict, Agents: []mesostest.AgentSpec{{ID: "a1", CPUs: 1, Mem: 512}}})
			info := fwInfo("roles", mesos.FrameworkInfo_Capability_MULTI_ROLE)
			info.Roles = []string{"r"}
			s := subscribe(t, m, protobufCodec, info)
			o := s.offer("a1")
			kept := shellTask("kept", o.AgentID, "true", 0, 0)
			for _, r := range o.Resources {
				if r.Name == "cpus" {
					r.Scalar = &mesos.Value_Scalar{Value: 0.1}
					kept.Resources = []mesos.Resource{r} // with the offer's allocation_info
				}
			}
			dropped := shellTask("dropped", o.AgentID, "true", 0.1, 0) // no allocation_info
			s.launch(o, 0, kept, dropped)
			s.expectAck("kept", mesos.TASK_STARTING)
			if strict {
				if st := s.expectUpdate("dropped", mesos.TASK_ERROR); !strings.Contains(st.GetMessage(), "no allocation_info") {
					t.Errorf("dropped = %v", st)
				}
			} else {
				s.expectAck("dropped", mesos.TASK_STARTING)
			}
		})
	}
}
