package actors

import (
	"errors"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/wire"
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
//
// When a node crashes, work in flight and its instances' uncommitted state
// are lost, so every node drops its pending snapshots and every replayable
// source rewinds to its last durable position (rewindMsg): records are
// replayed, never lost; duplicates are the price.

// edgeID identifies an input edge: a producer and its output slot.
type edgeID struct {
	addr, id string
	slot     int32
}

// inEdge is an input edge and the last batch processed on it.
type inEdge struct {
	from *actor.PID
	slot int32
	seq  uint64
}

// outWait is an output buffer and the seq it must be durable up to.
type outWait struct {
	b   *outBuf
	seq uint64
}

// snapshot is the durability point of one commit.
type snapshot struct {
	in     []inEdge
	out    []outWait
	pos    any
	hasPos bool
}

// durability is an instance's at-least-once bookkeeping (actor goroutine
// only).
type durability struct {
	edges   map[edgeID]*inEdge
	changed []*inEdge // edges processed on since the last snapshot
	pending []snapshot
}

// processed records that batch m was processed.
func (d *durability) processed(m *batchMsg) {
	if m.from == nil || m.seq == 0 {
		return
	}
	if d.edges == nil {
		d.edges = make(map[edgeID]*inEdge)
	}
	k := edgeID{m.from.Address, m.from.Id, m.slot}
	e := d.edges[k]
	if e == nil {
		e = &inEdge{from: m.from, slot: m.slot}
		d.edges[k] = e
	}
	if m.seq > e.seq {
		if e.seq == 0 || !containsEdge(d.changed, e) {
			d.changed = append(d.changed, e)
		}
		e.seq = m.seq
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

// reset forgets everything pending (after a crash elsewhere).
func (d *durability) reset() {
	d.pending = nil
	d.changed = nil
	clear(d.edges)
}

// snapshot takes the durability point of a commit that just succeeded.
// It is skipped while records wait in frozen subscriptions (their future
// batches are unknown); the next commit covers them.
func (i *instance) snapshot() {
	p := i.out
	if p.frozen > 0 {
		return
	}
	s := snapshot{in: make([]inEdge, 0, len(i.dur.changed))}
	for _, e := range i.dur.changed {
		s.in = append(s.in, *e)
	}
	for _, b := range p.slots {
		if last := b.sent + uint64(len(b.recs.chunks)); last > b.durable {
			s.out = append(s.out, outWait{b: b, seq: last})
		}
	}
	if src, ok := i.opv.(core.Replayable); ok && i.mode == modeActive {
		s.pos, s.hasPos = src.Position(), true
	}
	if len(s.in) == 0 && !s.hasPos {
		return // nothing to report upstream
	}
	i.dur.changed = i.dur.changed[:0]
	i.dur.pending = append(i.dur.pending, s)
	i.releaseSnapshots()
}

// releaseSnapshots releases, in order, the snapshots whose outputs are all
// durable.
func (i *instance) releaseSnapshots() {
	for len(i.dur.pending) > 0 {
		s := i.dur.pending[0]
		for _, w := range s.out {
			if w.b.durable < w.seq {
				return
			}
		}
		for _, e := range s.in {
			i.node.replyDurable(e.from, e.slot, e.seq)
		}
		if src, ok := i.opv.(core.Replayable); ok && s.hasPos {
			src.Durable(i.octx, s.pos)
		}
		i.dur.pending[0] = snapshot{}
		i.dur.pending = i.dur.pending[1:]
	}
}

// onDurable records a durable ack from downstream.
func (i *instance) onDurable(slot int32, seq uint64) {
	i.out.durableAck(slot, seq)
	i.releaseSnapshots()
}

// dropSnapshotsOn forgets pending snapshots waiting on b at seq or later:
// that batch bounced, so they would never be released (later snapshots,
// taken once its records are sent again, cover the same inputs).
func (i *instance) dropSnapshotsOn(b *outBuf, seq uint64) {
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
		}
	}
	i.dur.pending = keep
}

// rewind handles the crash of another node: forget what is pending and
// make a replayable source produce again from its last durable position.
func (i *instance) rewind() {
	i.dur.reset()
	src, ok := i.opv.(core.Replayable)
	if !ok || i.mode != modeActive || i.failed {
		return
	}
	i.begin(i.lo, i.curEvent)
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
		i.log.Warn("flush failed; will retry", "error", err)
	} else {
		i.log.Error("flush failed", "error", err)
	}
	i.setLastError("flush: " + err.Error())
	return false
}

// replyDurable sends a durable ack to a producer, locally or over the wire.
func (n *Node) replyDurable(to *actor.PID, slot int32, seq uint64) {
	if to.Address == n.addr {
		n.system.Root.Send(to, durableMsg{slot: slot, seq: seq})
		return
	}
	n.system.Root.Send(to, &wire.DurableAck{Slot: slot, Seq: seq})
}
