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

// specsFrom decodes data as operators, three bytes each: the operator
// (of 8), a stream it reads and one it writes (of 6 streams and the 8
// operators' dead-letter streams; a byte ≥ 224 means none).
func specsFrom(data []byte) []topology.OperatorSpec {
	stream := func(b byte) string {
		switch v := int(b) % 16; {
		case b >= 224:
			return ""
		case v < 6:
			return fmt.Sprintf("s%d", v)
		default:
			return core.DeadLetterStream(fmt.Sprintf("op%d", v%8))
		}
	}
	var out []topology.OperatorSpec
	for i := 0; i+2 < len(data) && len(out) < 64; i += 3 {
		m := core.Metadata{Name: fmt.Sprintf("op%d", data[i]%8)}
		if s := stream(data[i+1]); s != "" {
			m.Inputs = []core.Input{{Stream: s}}
		}
		if s := stream(data[i+2]); s != "" {
			m.Outputs = []string{s}
		}
		out = append(out, topology.OperatorSpec{Kind: "k", Meta: m})
	}
	return out
}

// FuzzCycles deploys the operators data describes one by one and checks
// each refusal and acceptance against the reachability oracle, and Cycles
// of the same operators stored unchecked.
func FuzzCycles(f *testing.F) {
	f.Add([]byte{0, 1, 1})                   // op0 reads and writes s1
	f.Add([]byte{0, 1, 2, 1, 2, 3, 2, 3, 1}) // op0 → s2 → op1 → s3 → op2 → s1 → op0
	f.Add([]byte{0, 6, 1})                   // op0 reads its own dead letters
	f.Add([]byte{0, 1, 2, 1, 2, 255, 0, 1, 224})
	now := time.Unix(1700000000, 0)
	f.Fuzz(func(t *testing.T, data []byte) {
		var checked, unchecked topology.Topology
		for _, s := range specsFrom(data) {
			next, _, err := checked.Deploy(s, now)
			onCycle := topologytest.OperatorsOnCycles(replace(checked, s))[s.Meta.Name]
			var ce *topology.CycleError
			switch {
			case err == nil && onCycle:
				t.Fatalf("deployed %+v onto a cycle", s.Meta)
			case err == nil:
				if err := next.Validate(); err != nil {
					t.Fatalf("deployed into an invalid topology: %v", err)
				}
				checked = next
			case !errors.As(err, &ce):
				t.Fatalf("deploy %+v: %v", s.Meta, err)
			case !onCycle:
				t.Fatalf("refused %+v, which is on no cycle: %v", s.Meta, err)
			}
			unchecked = replace(unchecked, s)
		}
		if err := topologytest.CheckCycles(unchecked); err != nil {
			t.Fatal(err)
		}
	})
}
