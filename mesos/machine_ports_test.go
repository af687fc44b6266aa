package mesos

import (
	"fmt"
	"testing"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// TestPortsFromOffers: each task takes two ports of its offer, lowest
// first, reserved ones first; an offer without enough ports does not fit,
// and the pending reason says so.
func TestPortsFromOffers(t *testing.T) {
	h := newHarness(t, pool("p", 3, 0.1, 32, 3))
	h.subscribe()
	o := offer("a1", 4, 4096, 0)
	o.Resources[3] = portsRes(5000, 5002) // three ports: one task
	out := h.offers(o)
	if got := launched(out); len(got) != 1 {
		t.Fatalf("launched %v, want one task (3 ports)", got)
	}
	ti := out.launches[0].tasks[0]
	var ports []mesos.Value_Range
	for _, r := range ti.Resources {
		if r.Name == "ports" {
			ports = append(ports, r.Ranges.Range...)
		}
	}
	if fmt.Sprint(ports) != "[{5000 5001}]" {
		t.Errorf("task ports %v, want 5000-5001", ports)
	}
	if tk := h.m.tasks[ti.TaskID.Value]; fmt.Sprint(tk.ports) != "[5000 5001]" {
		t.Errorf("recorded ports %v", tk.ports)
	}
	h2 := newHarness(t, pool("q", 1, 0.1, 32, 3))
	h2.subscribe()
	noPorts := offer("a2", 4, 4096, 0)
	noPorts.Resources = noPorts.Resources[:3]
	if got := launched(h2.offers(noPorts)); len(got) != 0 {
		t.Fatalf("launched %v on an offer without ports", got)
	}
	want := "no offer with 2 ports seen in 0 s; largest offer: 0 ports"
	if r := h2.m.status(h2.now).Tasks[0].Pending; r != want {
		t.Errorf("pending reason %q, want %q", r, want)
	}
}
