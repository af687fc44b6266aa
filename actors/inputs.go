package actors

import (
	"math"
	"time"

	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
)

// upstream is one producing instance of one of an instance's input
// streams: the unit by which barriers, watermarks and end-of-stream are
// tracked. Records from outside the runtime (Node.Produce) have no
// upstream and carry no controls.
//
// The epoch is part of it: after the producing operator rescales, its
// instance 0 is a new instance, with key groups (or, behind a shuffle,
// records) that several old ones had, and none of its old namesake's
// watermark. Carried over, that watermark would run ahead of the records
// the old layout's other instances bounced to the new one (4 → 1: the
// single new instance would inherit the fastest old one's watermark, and
// the slower ones' records would come late).
type upstream struct {
	stream string
	op     string
	index  int
	epoch  int64
}

// inputs is an instance's view of its input edges (actor goroutine only).
type inputs struct {
	version  int64             // topology version expected was computed from
	expected map[upstream]bool // every producing instance of every input stream

	// Watermarks (event time, ns): the latest of each upstream, and which
	// are idle or ended (excluded from the minimum).
	wm    map[upstream]int64
	idle  map[upstream]bool
	ended map[upstream]bool

	// Checkpoint alignment: the barrier being aligned, the upstreams that
	// delivered it, and (exactly-once) the batches that arrived after it
	// on those upstreams, held until the others deliver it too.
	aligning uint64
	arrived  map[upstream]bool
	blocked  []*batchMsg
	last     uint64 // the newest barrier completed or abandoned
	// triggered is the newest checkpoint triggered while barriers were
	// still to come: if the inputs end before they do, the instance
	// snapshots for it then.
	triggered uint64
}

// noWatermark is the watermark before any: no event time has passed.
const noWatermark = math.MinInt64

// upstreamsOf returns every producing instance of spec's input streams in
// topology t: for each input stream, each instance of each operator that
// declares it as an output (or, for a dead-letter stream, of the operator
// it belongs to).
func upstreamsOf(t topology.Topology, spec topology.OperatorSpec) map[upstream]bool {
	out := make(map[upstream]bool)
	for _, in := range spec.Meta.Inputs {
		for _, p := range t.Operators {
			if !producesTo(p, in.Stream) {
				continue
			}
			for idx := range p.Meta.Parallelism {
				out[upstream{stream: in.Stream, op: p.Meta.Name, index: idx, epoch: p.Epoch}] = true
			}
		}
	}
	return out
}

// producesTo reports whether operator p produces to stream.
func producesTo(p topology.OperatorSpec, stream string) bool {
	if stream == core.DeadLetterStream(p.Meta.Name) {
		return true
	}
	for _, o := range p.Meta.Outputs {
		if o == stream {
			return true
		}
	}
	return false
}

// refresh recomputes the expected upstreams when the topology changed.
func (in *inputs) refresh(t topology.Topology, spec topology.OperatorSpec) {
	if in.expected != nil && in.version == t.Version {
		return
	}
	in.version = t.Version
	in.expected = upstreamsOf(t, spec)
	in.forgetOldEpochs()
}

// forgetOldEpochs drops the watermarks and idleness of upstreams whose
// operator has a newer layout among the expected ones: they count for
// nothing any more (see upstream).
func (in *inputs) forgetOldEpochs() {
	type edge struct{ stream, op string }
	current := make(map[edge]int64)
	for u := range in.expected {
		current[edge{u.stream, u.op}] = u.epoch
	}
	for u := range in.wm {
		if e, ok := current[edge{u.stream, u.op}]; ok && u.epoch < e {
			delete(in.wm, u)
			delete(in.idle, u)
		}
	}
}

// upstreamOf returns the upstream of batch m; ok is false for records from
// outside the runtime.
func upstreamOf(m *batchMsg) (upstream, bool) {
	if m.FromOp == "" {
		return upstream{}, false
	}
	return upstream{stream: m.Stream, op: m.FromOp, index: m.FromIndex, epoch: m.FromEpoch}, true
}

// isBlocked reports whether batch m must wait for the barrier being
// aligned (it came after that barrier on its upstream).
func (in *inputs) isBlocked(m *batchMsg) bool {
	if in.aligning == 0 {
		return false
	}
	u, ok := upstreamOf(m)
	return ok && in.arrived[u]
}

// watermark returns the minimum watermark over the expected upstreams that
// are neither idle nor ended, and whether every expected upstream ended
// (then the watermark is the end of time).
func (in *inputs) watermark() (wm int64, allEnded bool) {
	wm, allEnded = math.MaxInt64, len(in.expected) > 0
	active := false
	for u := range in.expected {
		if in.ended[u] {
			continue
		}
		allEnded = false
		if in.idle[u] {
			continue
		}
		active = true
		w, ok := in.wm[u]
		if !ok {
			w = noWatermark
		}
		wm = min(wm, w)
	}
	if !active && !allEnded {
		return noWatermark, false // every live upstream idle: hold the watermark where it is
	}
	return wm, allEnded
}

// allIdle reports whether every live (expected, not ended) upstream is
// idle, there being at least one.
func (in *inputs) allIdle() bool {
	live := false
	for u := range in.expected {
		if in.ended[u] {
			continue
		}
		if !in.idle[u] {
			return false
		}
		live = true
	}
	return live
}

// noteWatermark records a watermark (or idleness) of upstream u; it
// reports whether u's watermark moved.
func (in *inputs) noteWatermark(u upstream, c *flow.Control) bool {
	if in.wm == nil {
		in.wm, in.idle = make(map[upstream]int64), make(map[upstream]bool)
	}
	wasIdle := in.idle[u]
	in.idle[u] = c.Idle
	if c.Idle {
		return !wasIdle
	}
	w := c.Watermark.UnixNano()
	if old, ok := in.wm[u]; ok && w <= old {
		return wasIdle // watermarks never go back
	}
	in.wm[u] = w
	return true
}

// noteEnd records that upstream u ended.
func (in *inputs) noteEnd(u upstream) {
	if in.ended == nil {
		in.ended = make(map[upstream]bool)
	}
	in.ended[u] = true
}

// active reports whether u counts for alignment: an expected upstream that
// has not ended.
func (in *inputs) active(u upstream) bool { return in.expected[u] && !in.ended[u] }

// aligned reports whether every active upstream delivered the barrier being
// aligned.
func (in *inputs) aligned() bool {
	for u := range in.expected {
		if !in.ended[u] && !in.arrived[u] {
			return false
		}
	}
	return true
}

// needsTrigger reports whether the instance takes its snapshot when the
// checkpoint is triggered rather than at barriers: it has no upstream that
// will send one (a source, an operator fed only from outside, or one whose
// upstreams all ended).
func (in *inputs) needsTrigger() bool {
	for u := range in.expected {
		if !in.ended[u] {
			return false
		}
	}
	return true
}

// wmTime converts a watermark to a time (zero for none).
func wmTime(ns int64) time.Time {
	if ns == noWatermark {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
