package topology_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
	"github.com/sluicehq/sluice/topology/topologytest"
)

// randomSpec returns an operator among 8 names reading and writing streams
// among 6 (and the operators' dead-letter streams).
func randomSpec(r *rand.Rand) topology.OperatorSpec {
	name := fmt.Sprintf("op%d", r.IntN(8))
	stream := func() string {
		if r.IntN(6) == 0 {
			return core.DeadLetterStream(fmt.Sprintf("op%d", r.IntN(8)))
		}
		return fmt.Sprintf("s%d", r.IntN(6))
	}
	m := core.Metadata{Name: name}
	seen := map[string]bool{}
	for range r.IntN(3) {
		if s := stream(); !seen[s] {
			seen[s] = true
			m.Inputs = append(m.Inputs, core.Input{Stream: s})
		}
	}
	seen = map[string]bool{}
	for range r.IntN(3) {
		if s := stream(); !seen[s] {
			seen[s] = true
			m.Outputs = append(m.Outputs, s)
		}
	}
	return topology.OperatorSpec{Kind: "k", Meta: m}
}

// TestCyclesMatchTheOracle deploys random operators one by one: a deploy
// is refused exactly when the operator would be on a cycle, and Cycles of
// a topology stored without the check reports exactly the operators on
// cycles.
func TestCyclesMatchTheOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	now := time.Unix(1700000000, 0)
	refused, withCycles := 0, 0
	for range 3000 {
		var checked, unchecked topology.Topology
		for range 1 + r.IntN(10) {
			s := randomSpec(r)
			next, _, err := checked.Deploy(s, now)
			var ce *topology.CycleError
			switch {
			case err == nil:
				if on := topologytest.OperatorsOnCycles(next); len(on) > 0 {
					t.Fatalf("deployed %+v into a topology with operators on cycles: %v", s.Meta, on)
				}
				checked = next
			case errors.As(err, &ce):
				refused++
				if !topologytest.OperatorsOnCycles(replace(checked, s))[s.Meta.Name] {
					t.Fatalf("refused %+v, which is on no cycle: %v", s.Meta, err)
				}
			default:
				t.Fatalf("deploy %+v: %v", s.Meta, err)
			}
			unchecked = replace(unchecked, s)
		}
		if err := topologytest.CheckCycles(unchecked); err != nil {
			t.Fatal(err)
		}
		if len(unchecked.Cycles()) > 0 {
			withCycles++
		}
	}
	if refused == 0 || withCycles == 0 {
		t.Fatalf("%d deploys refused, %d topologies with cycles: the random graphs test nothing", refused, withCycles)
	}
}

// replace adds s to t, or replaces the operator of its name, unchecked.
func replace(t topology.Topology, s topology.OperatorSpec) topology.Topology {
	t = t.Clone()
	s.Meta = s.Meta.WithDefaults()
	for i, o := range t.Operators {
		if o.Meta.Name == s.Meta.Name {
			t.Operators[i] = s
			return t
		}
	}
	t.Operators = append(t.Operators, s)
	return t
}
