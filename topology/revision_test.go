package topology

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
)

// TestSettingsChangesAreVisibleToNodes: a redeploy that changes an
// operator's streams (or other settings) without changing its layout
// keeps the epoch, so running instances stay; the new revision tells a
// node they run stale settings.
func TestSettingsChangesAreVisibleToNodes(t *testing.T) {
	count := op("count", in("words"), "counts")
	tp, _, err := (Topology{}).Deploy(count, now)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name              string
		change            func(s *OperatorSpec)
		epoch, revision   int64
		scale             int // Scale to this instead, when > 0
		unchangedSettings bool
	}{
		{name: "same spec again", change: func(*OperatorSpec) {}, unchangedSettings: true},
		{name: "an output more", change: func(s *OperatorSpec) { s.Meta.Outputs = []string{"counts", "stats"} }, revision: 1},
		{name: "an output renamed", change: func(s *OperatorSpec) { s.Meta.Outputs = []string{"counts", "statistics"} }, revision: 2},
		{name: "an input more", change: func(s *OperatorSpec) { s.Meta.Inputs = append(s.Meta.Inputs, core.Input{Stream: "more"}) }, revision: 3},
		{name: "routing changed", change: func(s *OperatorSpec) { s.Meta.Inputs[0].Routing = core.GroupBy }, revision: 4},
		{name: "restart policy", change: func(s *OperatorSpec) { s.Meta.Restart.DeadLetterAfter = 5 }, revision: 5},
		{name: "environment", change: func(s *OperatorSpec) { s.Env = map[string]string{"LOG": "debug"} }, revision: 6},
		{name: "rescale", scale: 4, epoch: 1, revision: 7},
		{name: "same again after the rescale", change: func(*OperatorSpec) {}, epoch: 1, revision: 7, unchangedSettings: true},
	}
	for _, st := range steps {
		before, _ := tp.Find("count")
		if st.scale > 0 {
			tp, err = tp.Scale("count", st.scale, now)
		} else {
			next := before
			next.Meta.Inputs = append([]core.Input(nil), before.Meta.Inputs...)
			st.change(&next)
			tp, _, err = tp.Deploy(next, now.Add(time.Second))
		}
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		after, _ := tp.Find("count")
		if after.Epoch != st.epoch || after.Revision != st.revision {
			t.Errorf("%s: epoch %d revision %d, want %d and %d", st.name, after.Epoch, after.Revision, st.epoch, st.revision)
		}
		if st.unchangedSettings != (after.Revision == before.Revision) {
			t.Errorf("%s: revision %d → %d", st.name, before.Revision, after.Revision)
		}
	}
	if c, _ := tp.Find("count"); len(c.Meta.Outputs) != 2 || c.Meta.Outputs[1] != "statistics" {
		t.Errorf("outputs %v, want [counts statistics]", c.Meta.Outputs)
	}

	// A program that changes its operator's outputs: Seed bumps the revision.
	prog := []OperatorSpec{op("gen", nil, "words")}
	tp, _, _ = (Topology{}).Seed(prog, now)
	prog[0].Meta.Outputs = []string{"words", "ticks"}
	tp, changed, err := tp.Seed(prog, now)
	if g, _ := tp.Find("gen"); err != nil || !changed || g.Revision != 1 || g.Epoch != 0 {
		t.Errorf("seeded output change: changed=%v epoch %d revision %d (%v), want a change to revision 1 in epoch 0", changed, g.Epoch, g.Revision, err)
	}

	// Killed and deployed again: a new epoch, revision 0.
	tp, _ = tp.Kill("gen", false)
	again := op("gen", nil, "words")
	again.Revision = 9 // whatever the caller passes
	tp, _, _ = tp.Deploy(again, now)
	if g, _ := tp.Find("gen"); g.Epoch != 1 || g.Revision != 0 {
		t.Errorf("redeployed after a kill: epoch %d revision %d, want 1 and 0", g.Epoch, g.Revision)
	}
}
