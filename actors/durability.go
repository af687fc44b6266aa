package actors

import (
	"errors"

	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/internal/core"
)

// At-least-once delivery (Config.AtLeastOnce) tracks, per edge, which
// batches have had their effects made durable, so that replayable sources
// (Kafka) commit their positions only when nothing downstream can lose
// what they produced.
//
// Each output buffer numbers its batches (seq 1, 2, …). When an instance
// commits its state (and after Flush for operators that have it), it takes
// a snapshot: for every input edge, the last batch processed; for every
// output buffer, the seq of the last batch that holds records produced so
// far (sent or still buffered); for a replayable source, its position. A
// snapshot is released when every output buffer in it has been durably
// acknowledged up to its seq: the instance then sends DurableAcks for its
// input edges (cumulative) and tells a source its position is durable.
// Leaves (no outputs) release at once: their commit is the durability.
// A snapshot taken while records wait in frozen subscriptions (a layout
// change) or for a reader of their stream (streams.go) is completed by the
// next commit once they have been sent.
//
// Batches that can never be acknowledged as durable must not hold snapshots
// back, or a source's position would stop advancing and every later crash
// would replay everything read since:
//
//   - a bounced batch (the destination moved): its records are sent again
//     in the new layout, which later snapshots wait for instead;
//   - a batch to a node that crashed: see below.
//
// When a node crashes, work in flight to it and its instances' uncommitted
// state are lost (their committed state survives in the StateLog), so on
// the crash notice (rewindMsg) every instance drops its pending snapshots
// and waives its unacknowledged output batches, and every replayable
// source rewinds to its last durable position: records are replayed, never
// lost; duplicates are the price. An instance that had output batches not
// yet durable also tells the producers of its input edges which batches it
// had processed (a rewound ack, below): nodes notice a crash at slightly
// different moments, so a source may have rewound, and replayed records
// into this instance, before this instance's own outputs to the crashed
// node were lost. A producer for which such batches were neither durable
// nor waived by its own rewind rewinds (again): that closes the window.
//
// So a crash replays, per source, what was read since its last durable
// position: with CommitInterval c and a pipeline d operators deep, about
// d·c plus the time the acks take (≈ 0.5–1 s of input with the default
// 200 ms), plus what was read until the crash was noticed when the source
// rewinds twice. That bounds the duplicates: nothing older is replayed.

// edgeID identifies an input edge: a producer and its output slot.
type edgeID struct {
	from flow.Endpoint
	slot int32
}

// inEdge is an input edge and the last batch processed on it.
type inEdge struct {
	from flow.Endpoint
	slot int32
	seq  uint64
}

// outWait is an output buffer and the seq it must be durable up to.
type outWait struct {
	b   *flow.Buf
	seq uint64
}

// snapshot is the durability point of one commit.
type snapshot struct {
	in     []inEdge
	out    []outWait
	pos    any
	hasPos bool
	// deferred: taken while records were held in frozen subscriptions, so
	// its outputs are not known yet. It holds the snapshots after it back
	// and keeps a released instance committing until a commit completes
	// it.
	deferred bool
}

// durability is an instance's at-least-once bookkeeping (actor goroutine
// only).
type durability struct {
	edges   map[edgeID]*inEdge
	changed []*inEdge // edges processed on since the last snapshot
	pending []snapshot
	// bounced holds the seqs of batches that bounced, by output slot: their
	// records are sent again in a new layout, so their durability is never
	// waited for on this slot (those of the batches around them still are:
	// a destination that was not placed yet may bounce one batch and
	// process the next).
	bounced map[int32]map[uint64]bool
}

// processed records that batch m was processed.
func (d *durability) processed(m *batchMsg) {
	if m.From.Addr == "" || m.Seq == 0 {
		return
	}
	if d.edges == nil {
		d.edges = make(map[edgeID]*inEdge)
	}
	k := edgeID{m.From, m.Slot}
	e := d.edges[k]
	if e == nil {
		e = &inEdge{from: m.From, slot: m.Slot}
		d.edges[k] = e
	}
	if m.Seq > e.seq {
		if e.seq == 0 || !containsEdge(d.changed, e) {
			d.changed = append(d.changed, e)
		}
		e.seq = m.Seq
	}
}

func containsEdge(es []*inEdge, e *inEdge) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}

// markChanged lists e among the edges to acknowledge at the next snapshot.
func (d *durability) markChanged(e *inEdge) {
	if !containsEdge(d.changed, e) {
		d.changed = append(d.changed, e)
	}
}

// reset forgets everything pending (after a crash elsewhere).
func (d *durability) reset() {
	d.pending = nil
	d.changed = nil
	clear(d.edges)
}

// lastDeferred reports whether the newest pending snapshot is deferred.
func (d *durability) lastDeferred() bool {
	return len(d.pending) > 0 && d.pending[len(d.pending)-1].deferred
}

// lastAwaited returns the seq of the last batch of b, up to seq last,
// whose durability is awaited: bounced batches at the end are skipped.
func (d *durability) lastAwaited(b *flow.Buf, last uint64) uint64 {
	bounced := d.bounced[b.Slot()]
	for last > b.Durable() && bounced[last] {
		last--
	}
	return last
}

// waitFor returns the seq up to which b's batches must be durable for a
// snapshot taken now (the last batch sent or buffered), or 0 when nothing
// of b is waited for.
func (d *durability) waitFor(b *flow.Buf) uint64 {
	if last := d.lastAwaited(b, b.Sent()+uint64(b.Unsent())); last > b.Durable() {
		return last
	}
	return 0
}

// snapshot takes the durability point of a commit that just succeeded.
// While records wait in frozen subscriptions (their future batches are
// unknown) it leaves a deferred snapshot that the next commit completes.
func (i *instance) snapshot() {
	p := i.out
	_, replayable := i.opv.(core.Replayable)
	if p.Holding() {
		if !i.dur.lastDeferred() && (len(i.dur.changed) > 0 || replayable) {
			i.dur.pending = append(i.dur.pending, snapshot{deferred: true})
		}
		return
	}
	s := snapshot{in: make([]inEdge, 0, len(i.dur.changed))}
	for _, e := range i.dur.changed {
		s.in = append(s.in, *e)
	}
	for _, b := range p.Slots() {
		if seq := i.dur.waitFor(b); seq > 0 {
			s.out = append(s.out, outWait{b: b, seq: seq})
		}
	}
	if replayable && i.mode == modeActive {
		s.pos, s.hasPos = i.opv.(core.Replayable).Position(), true
	}
	i.dur.changed = i.dur.changed[:0]
	switch {
	case i.dur.lastDeferred():
		// Complete it, even with nothing to report: it must not stay.
		i.dur.pending[len(i.dur.pending)-1] = s
	case len(s.in) == 0 && !s.hasPos:
		return // nothing to report upstream
	default:
		i.dur.pending = append(i.dur.pending, s)
	}
	i.releaseSnapshots()
}

// releaseSnapshots releases, in order, the snapshots whose outputs are all
// durable.
func (i *instance) releaseSnapshots() {
	for len(i.dur.pending) > 0 {
		s := i.dur.pending[0]
		if s.deferred {
			return
		}
		for _, w := range s.out {
			if w.b.Durable() < w.seq {
				return
			}
		}
		for _, e := range s.in {
			i.node.replyDurable(e.from, e.slot, e.seq, false)
		}
		if src, ok := i.opv.(core.Replayable); ok && s.hasPos {
			src.Durable(i.octx, s.pos)
		}
		i.dur.pending[0] = snapshot{}
		i.dur.pending = i.dur.pending[1:]
	}
}

// onDurable records a durable ack, or a rewound ack, from downstream.
func (i *instance) onDurable(slot int32, seq uint64, rewound bool) {
	if rewound {
		i.onRewound(slot, seq)
		return
	}
	i.out.DurableAck(slot, seq)
	i.releaseSnapshots()
}

// onRewound handles a rewound ack: the destination of slot rewound after a
// node crash having processed its batches up to seq, and may have lost
// their effects. Unless those batches are durable, or were waived by this
// instance's own rewind since, this instance rewinds: its sources replay
// them.
func (i *instance) onRewound(slot int32, seq uint64) {
	slots := i.out.Slots()
	if slot < 0 || int(slot) >= len(slots) || seq <= slots[slot].Durable() {
		return
	}
	i.log.Info("a downstream instance rewound with batches of ours not yet durable; rewinding", "slot", slot, "seq", seq, "durable", slots[slot].Durable())
	i.rewind()
	i.settle()
}

// dropSnapshotsOn handles batch seq of b bouncing: its records are sent
// again in the new layout, so its durability is no longer awaited on b,
// and pending snapshots waiting on b at seq or later, which might never be
// released, are dropped. Their input edges are acknowledged by the next
// snapshot, taken once the records are sent again; a source's next
// snapshot has a newer position.
func (i *instance) dropSnapshotsOn(b *flow.Buf, seq uint64) {
	if i.dur.bounced == nil {
		i.dur.bounced = make(map[int32]map[uint64]bool)
	}
	if i.dur.bounced[b.Slot()] == nil {
		i.dur.bounced[b.Slot()] = make(map[uint64]bool)
	}
	i.dur.bounced[b.Slot()][seq] = true
	keep := i.dur.pending[:0]
	for _, s := range i.dur.pending {
		drop := false
		for _, w := range s.out {
			if w.b == b && w.seq >= seq {
				drop = true
			}
		}
		if !drop {
			keep = append(keep, s)
			continue
		}
		for _, e := range s.in {
			if cur := i.dur.edges[edgeID{e.from, e.slot}]; cur != nil {
				i.dur.markChanged(cur)
			}
		}
	}
	clear(i.dur.pending[len(keep):])
	i.dur.pending = keep
}

// waiveOutputs gives up waiting for the durability of every batch sent so
// far (after a crash they are replayed instead). It reports whether some
// had not been acknowledged as durable.
func (i *instance) waiveOutputs() (outstanding bool) {
	for _, b := range i.out.Slots() {
		if i.dur.lastAwaited(b, b.Sent()) > b.Durable() {
			outstanding = true
		}
		b.SetDurable(b.Sent())
	}
	clear(i.dur.bounced)
	return outstanding
}

// rewind handles the crash of another node (or a rewound ack that needs
// it): forget what is pending, waive the outputs sent so far, tell the
// producers of the input edges if some of those outputs may be lost, and
// make a replayable source produce again from its last durable position.
func (i *instance) rewind() {
	if i.waiveOutputs() {
		for _, e := range i.dur.edges {
			if e.seq > 0 {
				i.node.replyDurable(e.from, e.slot, e.seq, true)
			}
		}
	}
	i.dur.reset()
	src, ok := i.opv.(core.Replayable)
	if !ok || i.mode != modeActive || i.failed {
		return
	}
	i.begin(i.lo, i.at.event)
	func() {
		defer func() {
			if r := recover(); r != nil {
				i.log.Error("source Rewind panicked", "panic", r)
			}
		}()
		if err := src.Rewind(i.octx); err != nil {
			i.log.Error("source could not rewind after a node crash; records may be lost", "error", err)
			i.setLastError("rewind: " + err.Error())
		}
	}()
	i.end()
	i.log.Info("source rewound to its last durable position after a node crash")
}

// flushOperator calls Flush on operators that have it, before a commit. It
// reports whether the commit may count as durable.
func (i *instance) flushOperator() bool {
	f, ok := i.opv.(core.Flusher)
	if !ok || i.mode != modeActive {
		return true
	}
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = &failure{value: r}
			}
		}()
		return f.Flush(i.octx)
	}()
	if err == nil {
		return true
	}
	if errors.Is(err, core.ErrTransient) {
		i.pub.transient.Add(1)
		i.log.Warn("flush failed; will retry", "error", err)
	} else {
		i.log.Error("flush failed", "error", err)
	}
	i.setLastError("flush: " + err.Error())
	return false
}
