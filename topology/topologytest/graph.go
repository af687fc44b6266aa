package topologytest

import (
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
)

// OperatorsOnCycles returns the operators of t that reach themselves
// through streams (an operator's dead letters count as its output),
// computed the naive way, by a search from each operator: an oracle for
// topology.Topology.Cycles.
func OperatorsOnCycles(t topology.Topology) map[string]bool {
	next := successors(t)
	on := map[string]bool{}
	for _, op := range t.Operators {
		start := op.Meta.Name
		seen := map[string]bool{}
		todo := slices.Clone(next[start])
		for len(todo) > 0 {
			cur := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			if cur == start {
				on[start] = true
				break
			}
			if !seen[cur] {
				seen[cur] = true
				todo = append(todo, next[cur]...)
			}
		}
	}
	return on
}

// successors maps each operator to those reading a stream it writes.
func successors(t topology.Topology) map[string][]string {
	readers := map[string][]string{}
	for _, op := range t.Operators {
		for _, in := range op.Meta.Inputs {
			readers[in.Stream] = append(readers[in.Stream], op.Meta.Name)
		}
	}
	next := map[string][]string{}
	for _, op := range t.Operators {
		for _, s := range append(slices.Clone(op.Meta.Outputs), core.DeadLetterStream(op.Meta.Name)) {
			next[op.Meta.Name] = append(next[op.Meta.Name], readers[s]...)
		}
	}
	return next
}

// CheckCycles checks t.Cycles against OperatorsOnCycles: every path is
// closed and each of its steps is an operator writing a stream the next
// one reads; every operator on a cycle is in exactly one reported cycle's
// Operators, and no other is.
func CheckCycles(t topology.Topology) error {
	writes := map[string]map[string]bool{}
	reads := map[string]map[string]bool{}
	for _, op := range t.Operators {
		n := op.Meta.Name
		writes[n] = map[string]bool{core.DeadLetterStream(n): true}
		for _, s := range op.Meta.Outputs {
			writes[n][s] = true
		}
		reads[n] = map[string]bool{}
		for _, in := range op.Meta.Inputs {
			reads[n][in.Stream] = true
		}
	}
	reported := map[string]bool{}
	for _, c := range t.Cycles() {
		p := c.Path
		if len(p) < 3 || len(p)%2 == 0 || p[0] != p[len(p)-1] {
			return fmt.Errorf("cycle %v is not a closed path of operators and streams", p)
		}
		for i := 0; i+2 < len(p); i += 2 {
			if !writes[p[i]][p[i+1]] || !reads[p[i+2]][p[i+1]] {
				return fmt.Errorf("cycle %v: %s does not write %s or %s does not read it", p, p[i], p[i+1], p[i+2])
			}
		}
		if !slices.Contains(c.Operators, p[0]) {
			return fmt.Errorf("cycle %v: its operators %v do not hold its start", p, c.Operators)
		}
		for _, o := range c.Operators {
			if reported[o] {
				return fmt.Errorf("operator %s is in two reported cycles", o)
			}
			reported[o] = true
		}
	}
	want := OperatorsOnCycles(t)
	for o := range want {
		if !reported[o] {
			return fmt.Errorf("operator %s is on a cycle, which Cycles does not report (reported: %v)", o, reported)
		}
	}
	for o := range reported {
		if !want[o] {
			return fmt.Errorf("Cycles reports operator %s, which is on no cycle", o)
		}
	}
	return nil
}
