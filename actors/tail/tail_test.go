package tail

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
)

// TestKindAndReaders: a node's readers are of a kind named after it (a
// digest of an id too long for a kind), and Readers finds the readers of
// every node in a topology, not operators merely named like them.
func TestKindAndReaders(t *testing.T) {
	if got, want := kindOf("n1"), "sluice.tail@n1"; got != want {
		t.Errorf("kindOf(n1) = %q, want %q", got, want)
	}
	long := kindOf(strings.Repeat("n", cluster.MaxKindLen))
	if len(long) > cluster.MaxKindLen || !strings.HasPrefix(long, tailKindPrefix) || long != kindOf(strings.Repeat("n", cluster.MaxKindLen)) {
		t.Errorf("kindOf(a long id) = %q: want a stable digest of at most %d bytes", long, cluster.MaxKindLen)
	}
	spec := func(name, kind string) topology.OperatorSpec {
		return topology.OperatorSpec{Kind: kind, Meta: core.Metadata{Name: name}}
	}
	topo := topology.Topology{Operators: []topology.OperatorSpec{
		spec(Prefix+"a", kindOf("n1")), spec("count", "count"), spec(Prefix+"b", "count"), spec(Prefix+"c", kindOf("n2")),
	}}
	if got, want := Readers(topo), []string{Prefix + "a", Prefix + "c"}; !slices.Equal(got, want) {
		t.Errorf("Readers = %v, want %v", got, want)
	}
}
