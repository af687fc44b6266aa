package autoscale

import (
	"cmp"
	"fmt"
	"math"
	"time"
)

// DefaultInstancesPerCPU is a node's capacity per cpu when the settings
// give none: two operator instances per cpu. An instance is one actor, so
// it uses at most one core while busy; sized at a target utilization of
// 0.7, and with most operators not busy all of the time, two per cpu keep
// a node's cores busy without queueing on them. Tune it per pipeline
// (NodeSpec.InstancesPerCPU).
const DefaultInstancesPerCPU = 2.0

// PerNode is the capacity of a node of cpus: the operator instances it is
// sized for, floor(cpus × instancesPerCPU) (DefaultInstancesPerCPU when
// instancesPerCPU is not positive), at least 1.
func PerNode(cpus, instancesPerCPU float64) int {
	if instancesPerCPU <= 0 {
		instancesPerCPU = DefaultInstancesPerCPU
	}
	return max(1, int(math.Floor(cpus*instancesPerCPU+1e-9)))
}

// NodesFor is the nodes that instances need at perNode each: ceil(instances
// ÷ perNode), at least 1.
func NodesFor(instances, perNode int) int {
	return max(1, (instances+max(perNode, 1)-1)/max(perNode, 1))
}

// Demand is the operator instances the cluster needs: for each operator
// with a decision, the more of its current and needed parallelism (so
// that nodes grow with an up-scale and shrink only once the operators
// did), and for every other operator its parallelism. A skewed operator's
// decision needs no more than it has (Decision.Needed): its hot key group
// is one instance's work however many there are.
func Demand(parallelism map[string]int, decisions map[string]Decision) int {
	n := 0
	for op, par := range parallelism {
		if d, ok := decisions[op]; ok {
			par = max(d.Current, d.Needed)
		}
		n += par
	}
	return n
}

// NodeSpec bounds and paces a node pool's size.
type NodeSpec struct {
	// Min and Max bound the nodes (Max 0: no bound).
	Min, Max int
	// ScaleDownAfter is the stabilisation window of down-scales: every
	// recommendation over it said fewer nodes (default 5m).
	ScaleDownAfter time.Duration
	// CoolDown is the least time between two changes (default 1m).
	CoolDown time.Duration
}

// withDefaults fills s's zero fields.
func (s NodeSpec) withDefaults() NodeSpec {
	s.Min = max(s.Min, 1)
	if s.Max > 0 {
		s.Max = max(s.Max, s.Min)
	}
	s.ScaleDownAfter = cmp.Or(s.ScaleDownAfter, 5*time.Minute)
	s.CoolDown = cmp.Or(s.CoolDown, time.Minute)
	return s
}

// NodeDecision is the NodePolicy's answer: the nodes a pool needs for the
// cluster's demand.
type NodeDecision struct {
	At time.Time `json:"at"`
	// Current is the pool's nodes now; Recommended what the demand needs
	// (Current when no change is due or allowed).
	Current     int `json:"current"`
	Recommended int `json:"recommended"`
	// Scale says the change is due now.
	Scale bool `json:"scale"`
	// Instances is the demand (operator instances, Demand) and PerNode
	// a node's capacity (PerNode); Fixed the capacity of nodes outside
	// the pool.
	Instances int `json:"instances"`
	PerNode   int `json:"perNode"`
	Fixed     int `json:"fixed,omitempty"`
	// Reason says why, for people.
	Reason string `json:"reason"`
}

// String describes d in one line with its inputs.
func (d NodeDecision) String() string {
	change := fmt.Sprintf("stay at %d nodes", d.Current)
	if d.Scale {
		change = fmt.Sprintf("scale %d → %d nodes", d.Current, d.Recommended)
	} else if d.Recommended != d.Current {
		change = fmt.Sprintf("recommend %d nodes (now %d)", d.Recommended, d.Current)
	}
	return fmt.Sprintf("%s: %s (%d instances needed, %d per node, %d on other nodes)", change, d.Reason, d.Instances, d.PerNode, d.Fixed)
}

// NodePolicy sizes one node pool: up at once (out of cool-down), down
// only once every recommendation over the stabilisation window said
// fewer, to the most of them, and never within CoolDown of the last
// change. Not safe for concurrent use.
type NodePolicy struct {
	lastChange time.Time
	downSince  time.Time
	downMax    int
}

// Applied tells the policy that the pool's size changed at now: the
// cool-down starts over.
func (p *NodePolicy) Applied(now time.Time) {
	p.lastChange, p.downSince, p.downMax = now, time.Time{}, 0
}

// Decide returns the decision for a pool of current nodes of perNode
// instances each, when the cluster needs instances and fixed of them fit
// on nodes outside the pool.
func (p *NodePolicy) Decide(now time.Time, spec NodeSpec, current, instances, perNode, fixed int) NodeDecision {
	spec = spec.withDefaults()
	d := NodeDecision{At: now, Current: current, Recommended: current, Instances: instances, PerNode: perNode, Fixed: fixed}
	needed := max(spec.Min, NodesFor(max(0, instances-fixed), perNode))
	if instances <= fixed {
		needed = spec.Min
	}
	bound := fmt.Sprintf("within [%d, %d]", spec.Min, spec.Max)
	if spec.Max > 0 && needed > spec.Max {
		needed = spec.Max
		bound = fmt.Sprintf("capped at the most, %d", spec.Max)
	} else if spec.Max == 0 {
		bound = fmt.Sprintf("at least %d", spec.Min)
	}
	why := fmt.Sprintf("%d instances need %d nodes of %d (%s)", max(0, instances-fixed), needed, perNode, bound)
	if needed == current {
		d.Reason = why
		p.downSince, p.downMax = time.Time{}, 0
		return d
	}
	cooled := p.lastChange.IsZero() || now.Sub(p.lastChange) >= spec.CoolDown
	if needed > current {
		p.downSince, p.downMax = time.Time{}, 0
		d.Recommended = needed
		if !cooled {
			d.Reason = fmt.Sprintf("%s; cooling down until %v after the last change", why, spec.CoolDown)
			return d
		}
		d.Scale = true
		d.Reason = why + ": growing the pool"
		return d
	}
	if p.downSince.IsZero() {
		p.downSince, p.downMax = now, needed
	}
	p.downMax = max(p.downMax, needed)
	d.Recommended = p.downMax
	switch held := now.Sub(p.downSince); {
	case !cooled:
		d.Reason = fmt.Sprintf("%s; cooling down until %v after the last change", why, spec.CoolDown)
	case held < spec.ScaleDownAfter:
		d.Reason = fmt.Sprintf("%s; shrinking once fewer were recommended for %v (for %v so far)", why, spec.ScaleDownAfter, held.Round(time.Second))
	default:
		d.Scale = true
		d.Reason = fmt.Sprintf("%s, recommended for %v: shrinking the pool to the most of those recommendations", why, held.Round(time.Second))
	}
	return d
}
