package autoscale_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/autoscale"
)

func TestPerNodeAndNodesFor(t *testing.T) {
	for _, c := range []struct {
		cpus, per float64
		want      int
	}{{2, 0, 4}, {0.5, 0, 1}, {0.5, 8, 4}, {0.1, 2, 1}, {1.5, 3, 4}} {
		if got := autoscale.PerNode(c.cpus, c.per); got != c.want {
			t.Errorf("PerNode(%v, %v) = %d, want %d", c.cpus, c.per, got, c.want)
		}
	}
	for _, c := range []struct{ instances, per, want int }{{0, 4, 1}, {4, 4, 1}, {5, 4, 2}, {8, 4, 2}, {9, 4, 3}, {3, 0, 3}} {
		if got := autoscale.NodesFor(c.instances, c.per); got != c.want {
			t.Errorf("NodesFor(%d, %d) = %d, want %d", c.instances, c.per, got, c.want)
		}
	}
}

// TestDemand: an operator counts the more of its current and needed
// instances; a skewed one only what it has; others their parallelism.
func TestDemand(t *testing.T) {
	par := map[string]int{"src": 1, "up": 2, "down": 4, "hot": 3, "fixed": 5}
	dec := map[string]autoscale.Decision{
		"up":   {Current: 2, Needed: 6},
		"down": {Current: 4, Needed: 1},
		"hot":  {Current: 3, Needed: 3, Skewed: true},
	}
	if got, want := autoscale.Demand(par, dec), 1+6+4+3+5; got != want {
		t.Errorf("Demand = %d, want %d", got, want)
	}
}

// TestNodePolicy: up at once, no change inside the cool-down, down only
// after every recommendation over the window said fewer (to the most of
// them), bounded by Max; a flapping demand changes nothing.
func TestNodePolicy(t *testing.T) {
	spec := autoscale.NodeSpec{Min: 1, Max: 3, ScaleDownAfter: 30 * time.Second, CoolDown: 10 * time.Second}
	var p autoscale.NodePolicy
	t0 := time.Unix(1_000_000, 0)
	d := p.Decide(t0, spec, 1, 4, 4, 0)
	if d.Scale || d.Recommended != 1 {
		t.Fatalf("4 instances on one node of 4: %v", d)
	}
	d = p.Decide(t0.Add(time.Second), spec, 1, 7, 4, 0)
	if !d.Scale || d.Recommended != 2 || !strings.Contains(d.Reason, "7 instances need 2 nodes of 4") {
		t.Fatalf("7 instances: %v", d)
	}
	p.Applied(t0.Add(time.Second))
	d = p.Decide(t0.Add(2*time.Second), spec, 2, 20, 4, 0)
	if d.Scale || d.Recommended != 3 || !strings.Contains(d.Reason, "cooling down") || !strings.Contains(d.Reason, "capped at the most, 3") {
		t.Fatalf("20 instances in the cool-down: %v", d)
	}
	// Down: fewer for the whole window, with a spell at 2 in it.
	now := t0.Add(20 * time.Second)
	d = p.Decide(now, spec, 3, 2, 4, 0) // as if at 3 nodes now
	if d.Scale || d.Recommended != 1 {
		t.Fatalf("first down recommendation: %v", d)
	}
	d = p.Decide(now.Add(10*time.Second), spec, 3, 6, 4, 0)
	if d.Scale || d.Recommended != 2 {
		t.Fatalf("second down recommendation: %v", d)
	}
	d = p.Decide(now.Add(31*time.Second), spec, 3, 2, 4, 0)
	if !d.Scale || d.Recommended != 2 {
		t.Fatalf("down after the window: %v, want 3 → 2 (the most recommended in it)", d)
	}
	// Flapping around the boundary: up, down, up, … within the window.
	var q autoscale.NodePolicy
	changes := 0
	cur := 2
	for k := 0; k < 60; k++ {
		inst := 8
		if k%2 == 1 {
			inst = 3
		}
		d := q.Decide(t0.Add(time.Duration(k)*time.Second), spec, cur, inst, 4, 0)
		if d.Scale {
			changes++
			cur = d.Recommended
			q.Applied(d.At)
		}
	}
	if changes != 0 {
		t.Errorf("%d changes under a demand flapping between 1 and 2 nodes at 2 nodes, want 0", changes)
	}
	// Capacity outside the pool counts.
	var r autoscale.NodePolicy
	if d := r.Decide(t0, spec, 1, 6, 4, 4); d.Scale || d.Recommended != 1 {
		t.Errorf("6 instances, 4 of them on other nodes: %v", d)
	}
}
