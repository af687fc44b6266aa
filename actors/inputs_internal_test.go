package actors

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
)

// TestWatermarkNotInheritedAcrossUpstreamRescale: an upstream operator
// rescaled 4 → 1 has a new instance 0 (a new epoch) that forwards what the
// old layout's slower instances bounced; the watermark its old namesake had
// reached must not count for it, or the bounced records come in late.
func TestWatermarkNotInheritedAcrossUpstreamRescale(t *testing.T) {
	reader := topology.OperatorSpec{Kind: "r", Epoch: 1, Meta: core.Metadata{Name: "r", Parallelism: 1, Inputs: []core.Input{{Stream: "s"}}}}
	topo := func(version, epoch int64, parallelism int) topology.Topology {
		up := topology.OperatorSpec{Kind: "f", Epoch: epoch, Meta: core.Metadata{Name: "f", Parallelism: parallelism, Outputs: []string{"s"}}}
		return topology.Topology{Version: version, Operators: []topology.OperatorSpec{up, reader}}
	}
	at := func(sec int64) *flow.Control {
		return &flow.Control{Kind: flow.Watermark, Watermark: time.Unix(sec, 0)}
	}
	from := func(index int, epoch int64) upstream {
		return upstream{stream: "s", op: "f", index: index, epoch: epoch}
	}
	var in inputs
	in.refresh(topo(1, 1, 4), reader)
	for idx, sec := range []int64{100, 40, 50, 60} {
		in.noteWatermark(from(idx, 1), at(sec))
	}
	if wm, _ := in.watermark(); wm != time.Unix(40, 0).UnixNano() {
		t.Fatalf("watermark over four upstreams = %v, want 40 s", wmTime(wm))
	}

	in.refresh(topo(2, 2, 1), reader)
	if wm, _ := in.watermark(); wm != noWatermark {
		t.Fatalf("watermark after the upstream's rescale to 1 = %v, want none until its new instance sends one (the old instance 0 had 100 s)", wmTime(wm))
	}
	if len(in.wm) != 0 {
		t.Errorf("watermarks of the old layout kept: %v", in.wm)
	}
	// A late watermark of the old layout counts for nothing.
	in.noteWatermark(from(0, 1), at(120))
	if wm, _ := in.watermark(); wm != noWatermark {
		t.Fatalf("an old instance's watermark moved the new layout's to %v", wmTime(wm))
	}
	in.noteWatermark(from(0, 2), at(45))
	if wm, _ := in.watermark(); wm != time.Unix(45, 0).UnixNano() {
		t.Fatalf("watermark from the new instance = %v, want 45 s", wmTime(wm))
	}
}
