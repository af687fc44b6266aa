package actors_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
)

// gated is a source whose instances each produce records until they have
// produced limit in total (a position kept in state), so that a test
// decides how far it gets before and after a restart or a move.
type gated struct {
	par   int
	limit *atomic.Int64
	next  int64
}

func (g *gated) Metadata() core.Metadata {
	return core.Metadata{Name: "gen", Outputs: []string{"words"}, Parallelism: g.par}
}

func (g *gated) Init(ctx core.Context) error {
	g.next = 0
	v, err := ctx.State().Get([]byte("next"))
	if err == nil {
		g.next, err = strconv.ParseInt(string(v), 10, 64)
		return err
	}
	return nil
}

func (g *gated) Poll(ctx core.Context) error {
	produced := false
	for n := 0; n < 100 && g.next < g.limit.Load(); n++ {
		key := "k" + strconv.Itoa(int(g.next)%50) + "-" + strconv.Itoa(ctx.Instance().Index)
		if err := ctx.Produce("words", core.Record{Key: []byte(key)}); err != nil {
			return err
		}
		g.next++
		produced = true
	}
	if produced {
		ctx.State().Set([]byte("next"), []byte(strconv.FormatInt(g.next, 10)))
	}
	return nil
}

func (g *gated) ProcessRecord(core.Context, core.Record) error      { return nil }
func (g *gated) ProcessTimer(core.Context, string, time.Time) error { return nil }

// producedRunning sums the Produced of op's running instances on n.
func producedRunning(n *actors.Node, op string) int64 {
	var sum int64
	for _, st := range n.Status() {
		if st.Name == op {
			for _, in := range st.Instances {
				if in.State == "running" {
					sum += in.Produced
				}
			}
		}
	}
	return sum
}

// Produced, like Processed, counts over the instance's life: it is stored
// with the instance's state, so it survives a restart of the node.
func TestProducedPersistsAcrossRestart(t *testing.T) {
	const par = 2
	dir := t.TempDir()
	limit := &atomic.Int64{}
	ops := []core.Factory{
		func() core.Operator { return &gated{par: par, limit: limit} },
		func() core.Operator { return &counter{name: "count", input: "words", parallelism: 2} },
	}
	limit.Store(1000)
	n := startNode(t, dir, ops...)
	sluicetest.WaitFor(t, time.Minute, "first records counted", func() bool { return processed(n, "count") == par*1000 })
	if got := producedRunning(n, "gen"); got != par*1000 {
		t.Fatalf("gen produced %d before the restart, want %d", got, par*1000)
	}
	stop(t, n)

	limit.Store(3000)
	n = startNode(t, dir, ops...)
	sluicetest.WaitFor(t, time.Minute, "every record counted", func() bool { return processed(n, "count") == par*3000 })
	if got := producedRunning(n, "gen"); got != par*3000 {
		t.Fatalf("gen produced %d over its life, want %d (the count must survive the restart)", got, par*3000)
	}
}
