package actors

import (
	"math/rand/v2"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/placement"
)

// producer is the sending side of an instance (or of the node's ingress): it
// routes produced records to per-destination output buffers, sends them in
// batches and keeps per-destination credits.
//
// A producer is not safe for concurrent use.
type producer struct {
	node *Node
	self *actor.PID // receives the acks

	version uint64               // route table version the cache was built from
	streams map[string][]*subOut // stream → one entry per subscribing operator
	slots   []*outBuf            // every buffer, indexed by slot
	rng     *rand.Rand           // shuffle routing
	dirty   []*outBuf            // buffers holding unsent records
	mark    []int                // len(recs) of dirty buffers at the start of an attempt
	anyFull bool                 // some buffer reached BatchSize since the last flush

	lastStream string    // the stream of the previous produce call …
	lastOuts   []*subOut // … and its subscriptions, to skip the map lookup
}

// subOut is a producer's view of one subscription.
type subOut struct {
	sub  *subscription
	bufs []*outBuf // by instance index
	next int       // round-robin position
}

// outBuf buffers records for one destination instance.
type outBuf struct {
	slot     int32
	stream   string
	routing  core.Routing
	dest     *actor.PID
	recs     []core.Record
	inflight int  // batches sent and not yet acknowledged
	isDirty  bool // listed in producer.dirty
}

func newProducer(n *Node, self *actor.PID, seed uint64) *producer {
	return &producer{
		node:    n,
		self:    self,
		streams: make(map[string][]*subOut),
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
}

// refresh rebuilds the per-stream cache when the route table changed.
// Buffers of destinations that still exist are kept with their records,
// credits and slot numbers; slots are never reused, so a late ack always
// finds the buffer it belongs to.
func (p *producer) refresh(t *routeTable) {
	if t.version == p.version {
		return
	}
	p.version = t.version
	p.lastStream, p.lastOuts = "", nil
	type destStream struct{ addr, id, stream string }
	old := make(map[destStream]*outBuf, len(p.slots))
	for _, b := range p.slots {
		old[destStream{b.dest.Address, b.dest.Id, b.stream}] = b
	}
	clear(p.streams)
	for stream, subs := range t.streams {
		outs := make([]*subOut, 0, len(subs))
		for _, s := range subs {
			so := &subOut{sub: s, bufs: make([]*outBuf, len(s.pids))}
			for i, pid := range s.pids {
				b := old[destStream{pid.Address, pid.Id, stream}]
				if b == nil {
					b = &outBuf{slot: int32(len(p.slots)), stream: stream, dest: pid}
					p.slots = append(p.slots, b)
				}
				b.routing = s.routing
				so.bufs[i] = b
			}
			outs = append(outs, so)
		}
		p.streams[stream] = outs
	}
}

// produce routes rec to every operator subscribed to stream. It returns the
// number of operators it was routed to.
func (p *producer) produce(stream string, rec core.Record) int {
	p.refresh(p.node.table.Load())
	outs := p.lastOuts
	if stream != p.lastStream {
		outs = p.streams[stream]
		p.lastStream, p.lastOuts = stream, outs
	}
	for _, so := range outs {
		switch so.sub.routing {
		case core.GroupBy:
			kg := placement.KeyGroup(rec.Key, so.sub.keyGroups)
			p.add(so.bufs[placement.InstanceFor(kg, so.sub.keyGroups, len(so.bufs))], rec)
		case core.RoundRobin:
			p.add(so.bufs[so.next], rec)
			if so.next++; so.next == len(so.bufs) {
				so.next = 0
			}
		case core.Broadcast:
			for _, b := range so.bufs {
				p.add(b, rec)
			}
		default: // Shuffle
			p.add(so.bufs[p.rng.IntN(len(so.bufs))], rec)
		}
	}
	return len(outs)
}

func (p *producer) add(b *outBuf, rec core.Record) {
	if !b.isDirty {
		b.isDirty = true
		p.dirty = append(p.dirty, b)
		p.mark = append(p.mark, len(b.recs))
		if b.recs == nil {
			b.recs = make([]core.Record, 0, p.node.cfg.BatchSize)
		}
	}
	b.recs = append(b.recs, rec)
	if len(b.recs) >= p.node.cfg.BatchSize {
		p.anyFull = true
	}
}

// begin marks the start of an attempt: records added after it can be
// discarded by rollback.
func (p *producer) begin() {
	for i, b := range p.dirty {
		p.mark[i] = len(b.recs)
	}
}

// rollback discards the records added since begin.
func (p *producer) rollback() {
	for i, b := range p.dirty {
		clear(b.recs[p.mark[i]:])
		b.recs = b.recs[:p.mark[i]]
	}
}

// flushFull sends full buffers that have credit, if there are any.
func (p *producer) flushFull() {
	if p.anyFull {
		p.flush(false)
	}
}

// pending reports whether any record is waiting to be sent.
func (p *producer) pending() bool {
	for _, b := range p.dirty {
		if len(b.recs) > 0 {
			return true
		}
	}
	return false
}

// flush sends buffers that have credit: all of them when all is true, only
// full ones otherwise. It reports whether some full buffer could not be sent
// for lack of credit, which means the owner must stop taking input.
func (p *producer) flush(all bool) (blocked bool) {
	size, credits := p.node.cfg.BatchSize, p.node.cfg.Credits
	p.anyFull = false
	keep := p.dirty[:0]
	marks := p.mark[:0]
	for _, b := range p.dirty {
		for len(b.recs) > 0 && (all || len(b.recs) >= size) && b.inflight < credits {
			n := min(len(b.recs), size)
			p.send(b, b.recs[:n:n])
			b.recs = b.recs[n:]
		}
		if len(b.recs) == 0 {
			b.recs = nil
			b.isDirty = false
			continue
		}
		if len(b.recs) >= size && b.inflight >= credits {
			blocked = true
			p.anyFull = true
		}
		keep = append(keep, b)
		marks = append(marks, len(b.recs))
	}
	p.dirty, p.mark = keep, marks
	return blocked
}

func (p *producer) send(b *outBuf, recs []core.Record) {
	b.inflight++
	p.node.queued.Add(int64(len(recs)))
	p.node.system.Root.Send(b.dest, &batchMsg{
		stream:  b.stream,
		routing: b.routing,
		from:    p.self,
		slot:    b.slot,
		records: recs,
	})
}

// ack returns a credit to slot's buffer.
func (p *producer) ack(slot int32) {
	if int(slot) < len(p.slots) && p.slots[slot].inflight > 0 {
		p.slots[slot].inflight--
	}
}
