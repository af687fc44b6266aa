package actors_test

import (
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
)

// gate is a sink that holds every record until open is closed: its
// producers run out of credits and block.
type gate struct{ open chan struct{} }

func (g *gate) Metadata() core.Metadata {
	return core.Metadata{Name: "gate", Inputs: []core.Input{{Stream: "words", Routing: core.Shuffle}}, Parallelism: 1}
}
func (g *gate) Init(core.Context) error { return nil }
func (g *gate) ProcessRecord(core.Context, core.Record) error {
	<-g.open
	return nil
}
func (g *gate) ProcessTimer(core.Context, string, time.Time) error { return nil }

// blocked returns the Blocked time of op's instances on n.
func blocked(n *actors.Node, op string) (sum time.Duration) {
	for _, st := range n.Status() {
		if st.Name == op {
			for _, in := range st.Instances {
				sum += in.Blocked
			}
		}
	}
	return sum
}

// TestBlockedCountsTimeWithoutCredit: a source whose consumer stops taking
// records accrues Blocked time while it waits for credit; the consumer,
// which has nobody downstream, accrues none.
func TestBlockedCountsTimeWithoutCredit(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(g.open) }) }
	n := startNode(t, t.TempDir(),
		func() core.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "words", Count: 100_000, Key: sluicetest.Key(500)}
		},
		func() core.Operator { return g },
	)
	t.Cleanup(release) // before the node stops (cleanups run last first)
	sluicetest.WaitFor(t, 30*time.Second, "gen blocked by backpressure", func() bool { return blocked(n, "gen") > 0 })
	first := blocked(n, "gen")
	sluicetest.WaitFor(t, 30*time.Second, "gen's blocked time to grow while the gate holds", func() bool { return blocked(n, "gen") > first })
	release()
	sluicetest.WaitFor(t, time.Minute, "every record through the gate", func() bool { return processed(n, "gate") == 100_000 })
	if b := blocked(n, "gate"); b != 0 {
		t.Fatalf("the gate, a sink, was blocked for %v", b)
	}
}
