package actors

import (
	"math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/placement"
)

// producer is the sending side of an instance (or of the node's ingress): it
// routes produced records to per-destination output buffers, sends them in
// batches and keeps per-destination credits.
//
// When a subscription's layout changes (an instance moved to another node,
// or the operator was rescaled) the producer freezes that subscription: new
// records are held, and nothing is sent under the new layout until every
// batch sent under the old one has been acknowledged or bounced back. Held
// and bounced records are then routed again under the new layout, bounced
// ones first, so records of one key keep their order across the move.
//
// A producer is not safe for concurrent use.
type producer struct {
	node *Node
	self *actor.PID // receives the acks and bounces

	table   *routeTable
	streams map[string][]*subOut // stream → one entry per subscribing operator
	subs    map[subKey]*subOut   // the same entries, by stream and operator
	slots   []*outBuf            // every buffer ever made, indexed by slot
	rng     *rand.Rand           // shuffle routing
	dirty   []*outBuf            // buffers holding unsent records
	mark    []int                // len(recs) of dirty buffers at the start of an attempt
	anyFull bool                 // some buffer reached BatchSize since the last flush
	frozen  int                  // number of frozen subscriptions

	lastStream string    // the stream of the previous produce call …
	lastOuts   []*subOut // … and its subscriptions, to skip the map lookup

	// Records produced to streams that no operator reads, held until one
	// does when hold is set, else dropped and counted (see streams.go).
	hold    bool
	unread  []*unreadStream
	unreadN int // records in unread
}

// unreadStream holds the records produced to one stream while no operator
// read it.
type unreadStream struct {
	stream  string
	recs    []core.Record
	mark    int // len(recs) at the start of the current attempt
	counter *streamCounter
}

type subKey struct{ stream, operator string }

// subOut is a producer's view of one subscription.
type subOut struct {
	sub  *subscription
	bufs []*outBuf // by instance index, current layout
	next int       // round-robin position

	// While frozen: records waiting for the old layout to drain, in order,
	// and the buffers of old layouts with batches still in flight.
	frozen    bool
	needTable bool      // a bounce showed the layout is stale: wait for a new table …
	retryAt   time.Time // … or until this time, then try the same layout again
	held      []core.Record
	heldMark  int // len(held) at the start of the current attempt
	old       []*outBuf
}

// outBuf buffers records for one destination instance.
type outBuf struct {
	slot     int32
	stream   string
	routing  core.Routing
	dest     *actor.PID // nil when no node hosts the instance
	local    *instance  // the destination, when it is on this node
	owner    *subOut
	retired  bool // belongs to a previous layout of owner
	recs     recBuf
	inflight int    // batches sent and not yet acknowledged or bounced
	isDirty  bool   // listed in producer.dirty
	sent     uint64 // seq of the last batch sent
	durable  uint64 // highest seq acknowledged as durable
}

func newProducer(n *Node, self *actor.PID, seed uint64) *producer {
	return &producer{
		node:    n,
		self:    self,
		hold:    n.cfg.AtLeastOnce,
		streams: make(map[string][]*subOut),
		subs:    make(map[subKey]*subOut),
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
}

// refresh adopts a newer route table: subscriptions whose layout changed are
// frozen until the batches sent under the old layout have come back.
func (p *producer) refresh() {
	t := p.node.table.Load()
	if p.table == t {
		return
	}
	p.table = t
	p.lastStream, p.lastOuts = "", nil
	seen := make(map[subKey]bool)
	clear(p.streams)
	for stream, subs := range t.streams {
		outs := make([]*subOut, 0, len(subs))
		for _, s := range subs {
			k := subKey{stream, s.operator}
			seen[k] = true
			so := p.subs[k]
			switch {
			case so == nil:
				so = &subOut{sub: s}
				so.bufs = p.newBufs(so, s)
				p.subs[k] = so
			case so.needTable || !sameLayout(so.sub, s):
				p.freeze(so)
				so.sub = s
				so.needTable = false
				so.bufs = p.newBufs(so, s)
			default:
				so.sub = s
			}
			outs = append(outs, so)
		}
		p.streams[stream] = outs
	}
	// Subscriptions that disappeared (operator killed): drop what they held.
	for k, so := range p.subs {
		if !seen[k] {
			for _, b := range so.bufs {
				p.drop(b)
			}
			if so.frozen {
				p.frozen--
			}
			delete(p.subs, k)
		}
	}
	for _, so := range p.subs {
		p.forgetDead(so)
		p.maybeThaw(so)
	}
	p.deliverUnread()
}

// noReader takes a record produced to a stream that no operator reads in
// the producer's route table. If a newer table (not adopted yet: the layout
// stays fixed during an attempt) has a reader, the record is held and
// delivered when the table is adopted, in every mode. Otherwise it is held
// when the producer holds records of unread streams (except dead letters),
// else dropped and counted (see streams.go).
func (p *producer) noReader(stream string, rec core.Record) {
	if !p.keepUnread(stream) {
		if latest := p.node.table.Load(); latest == p.table || len(latest.routes(stream)) == 0 {
			p.node.dropped(stream, 1)
			return
		}
	}
	var u *unreadStream
	for _, x := range p.unread {
		if x.stream == stream {
			u = x
			break
		}
	}
	if u == nil {
		u = &unreadStream{stream: stream, counter: p.node.streams.counter(stream)}
		p.unread = append(p.unread, u)
	}
	u.recs = append(u.recs, rec)
	u.counter.held.Add(1)
	p.unreadN++
}

// keepUnread reports whether records of stream wait for a reader rather
// than being dropped when it has none.
func (p *producer) keepUnread(stream string) bool {
	return p.hold && !core.IsDeadLetterStream(stream)
}

// deliverUnread routes the held records of streams that have readers in
// the adopted table, in the order they were produced and ahead of anything
// produced later; those of streams that still have none are dropped unless
// they are to be kept.
func (p *producer) deliverUnread() {
	if len(p.unread) == 0 {
		return
	}
	keep := p.unread[:0]
	for _, u := range p.unread {
		outs := p.streams[u.stream]
		switch {
		case len(u.recs) == 0:
			continue
		case len(outs) > 0:
			for _, rec := range u.recs {
				p.routeAll(outs, rec)
			}
		case p.keepUnread(u.stream):
			keep = append(keep, u)
			continue
		default:
			p.node.dropped(u.stream, len(u.recs))
		}
		u.counter.held.Add(-int64(len(u.recs)))
		p.unreadN -= len(u.recs)
	}
	clear(p.unread[len(keep):])
	p.unread = keep
}

// holding reports whether records wait for a layout change or for a
// reader, so that the batches they will travel in are not known yet.
func (p *producer) holding() bool { return p.frozen > 0 || p.unreadN > 0 }

// newBufs makes the output buffers of a subscription layout.
func (p *producer) newBufs(so *subOut, s *subscription) []*outBuf {
	bufs := make([]*outBuf, len(s.pids))
	for i, pid := range s.pids {
		b := &outBuf{slot: int32(len(p.slots)), stream: s.stream, routing: s.routing, dest: pid, owner: so, recs: recBuf{size: p.node.cfg.BatchSize}}
		if pid != nil && pid.Address == p.table.local {
			b.local = p.node.lookup(pid.Id)
		}
		p.slots = append(p.slots, b)
		bufs[i] = b
	}
	return bufs
}

// freeze retires so's current buffers: their unsent records are held, and
// nothing more is sent until the retired buffers have no batch in flight.
func (p *producer) freeze(so *subOut) {
	if !so.frozen {
		so.frozen = true
		p.frozen++
	}
	for _, b := range so.bufs {
		b.retired = true
		so.held = append(so.held, b.recs.Drain()...)
		p.drop(b)
		if b.inflight > 0 {
			so.old = append(so.old, b)
		}
	}
	so.bufs = nil
}

// drop empties b and removes it from the dirty list.
func (p *producer) drop(b *outBuf) {
	b.recs.TruncateTo(0)
	if !b.isDirty {
		return
	}
	b.isDirty = false
	for i, d := range p.dirty {
		if d == b {
			p.dirty = append(p.dirty[:i], p.dirty[i+1:]...)
			p.mark = append(p.mark[:i], p.mark[i+1:]...)
			return
		}
	}
}

// forgetDead gives up on batches in flight to nodes that left the cluster:
// they are lost with the node (see the guarantees in ARCHITECTURE.md).
func (p *producer) forgetDead(so *subOut) {
	keep := so.old[:0]
	for _, b := range so.old {
		if b.inflight > 0 && b.dest != nil && !p.table.live[b.dest.Address] {
			p.node.log.Warn("batches in flight to a node that left are lost", "stream", b.stream, "to", b.dest.String(), "batches", b.inflight)
			b.inflight = 0
		}
		if b.inflight > 0 {
			keep = append(keep, b)
		}
	}
	so.old = keep
}

// retryBounced gives up waiting for a new route table for subscriptions
// whose records were bounced long enough ago: the destination node may
// simply not have placed the instance yet. It reports whether any
// subscription is still waiting.
func (p *producer) retryBounced(now time.Time) (waiting bool) {
	for _, so := range p.subs {
		if !so.needTable {
			continue
		}
		if now.Before(so.retryAt) {
			waiting = true
			continue
		}
		so.needTable = false
		so.bufs = p.newBufs(so, so.sub)
		p.maybeThaw(so)
	}
	return waiting
}

// bounceRetry is how long a producer holds bounced records before trying
// the same layout again.
const bounceRetry = 50 * time.Millisecond

// maybeThaw routes so's held records under the current layout once nothing
// is in flight under an old one.
func (p *producer) maybeThaw(so *subOut) {
	if !so.frozen || so.needTable || len(so.old) > 0 {
		return
	}
	so.frozen = false
	p.frozen--
	held := so.held
	so.held = nil
	for _, rec := range held {
		p.route(so, rec)
	}
}

// produce routes rec to every operator subscribed to stream; a record of a
// stream nobody reads goes to noReader.
//
// The layout stays fixed during an attempt: a new route table is adopted
// only in begin, ack, bounce and on routesMsg, between attempts. A record
// produced under a table that predates a new reader of its stream (a
// source's Poll may wait for data while the reader is deployed) is held
// or counted, never silently lost, and held records reach the reader once
// the table is adopted.
func (p *producer) produce(stream string, rec core.Record) {
	outs := p.lastOuts
	if stream != p.lastStream {
		outs = p.streams[stream]
		p.lastStream, p.lastOuts = stream, outs
	}
	if len(outs) == 0 {
		p.noReader(stream, rec)
		return
	}
	p.routeAll(outs, rec)
}

// routeAll routes rec to each of outs, or holds it for a frozen one.
func (p *producer) routeAll(outs []*subOut, rec core.Record) {
	for _, so := range outs {
		if so.frozen {
			so.held = append(so.held, rec)
			continue
		}
		p.route(so, rec)
	}
}

// route appends rec to the buffer(s) its routing picks in so's layout.
func (p *producer) route(so *subOut, rec core.Record) {
	switch so.sub.routing {
	case core.GroupBy:
		kg := placement.KeyGroup(rec.Key, so.sub.keyGroups)
		p.add(so.bufs[placement.InstanceFor(kg, so.sub.keyGroups, len(so.bufs))], rec)
	case core.RoundRobin:
		p.add(so.bufs[so.next%len(so.bufs)], rec)
		so.next = (so.next + 1) % len(so.bufs)
	case core.Broadcast:
		for _, b := range so.bufs {
			p.add(b, rec)
		}
	default: // Shuffle
		p.add(so.bufs[p.rng.IntN(len(so.bufs))], rec)
	}
}

func (p *producer) add(b *outBuf, rec core.Record) {
	if !b.isDirty {
		b.isDirty = true
		p.dirty = append(p.dirty, b)
		p.mark = append(p.mark, b.recs.Len())
	}
	b.recs.Add(rec)
	if b.recs.Len() >= p.node.cfg.BatchSize {
		p.anyFull = true
	}
}

// begin adopts the latest route table and marks the start of an attempt:
// records added after it can be discarded by rollback.
func (p *producer) begin() {
	p.refresh()
	for i, b := range p.dirty {
		p.mark[i] = b.recs.Len()
	}
	if p.frozen > 0 {
		for _, so := range p.subs {
			so.heldMark = len(so.held)
		}
	}
	for _, u := range p.unread {
		u.mark = len(u.recs)
	}
}

// rollback discards the records added since begin.
func (p *producer) rollback() {
	for i, b := range p.dirty {
		b.recs.TruncateTo(p.mark[i])
	}
	if p.frozen > 0 {
		for _, so := range p.subs {
			if so.frozen && so.heldMark <= len(so.held) {
				clear(so.held[so.heldMark:])
				so.held = so.held[:so.heldMark]
			}
		}
	}
	for _, u := range p.unread {
		if n := len(u.recs) - u.mark; n > 0 {
			clear(u.recs[u.mark:])
			u.recs = u.recs[:u.mark]
			u.counter.held.Add(-int64(n))
			p.unreadN -= n
		}
	}
}

// pending reports whether any record is waiting to be sent.
func (p *producer) pending() bool {
	if p.frozen > 0 {
		return true
	}
	for _, b := range p.dirty {
		if b.recs.Len() > 0 {
			return true
		}
	}
	return false
}

// flushFull sends full buffers that have credit, if there are any.
func (p *producer) flushFull() {
	if p.anyFull {
		p.flush(false)
	}
}

// flush sends buffers that have credit: all of them when all is true, only
// full ones otherwise. It reports whether the producer must stop taking
// input: a full buffer has no credit, or too many records are held by
// frozen subscriptions.
func (p *producer) flush(all bool) (blocked bool) {
	size, credits := p.node.cfg.BatchSize, p.node.cfg.Credits
	limit := size * p.node.cfg.BufferBatches
	p.anyFull = false
	keep := p.dirty[:0]
	marks := p.mark[:0]
	for _, b := range p.dirty {
		for b.dest != nil && b.recs.Len() > 0 && (all || b.recs.Len() >= size) && b.inflight < credits {
			p.send(b, b.recs.Take())
		}
		if b.recs.Len() == 0 {
			b.isDirty = false
			continue
		}
		if b.recs.Len() >= size && (b.dest == nil || b.inflight >= credits) {
			p.anyFull = true
			if b.recs.Len() >= limit {
				blocked = true
			}
		}
		keep = append(keep, b)
		marks = append(marks, b.recs.Len())
	}
	p.dirty, p.mark = keep, marks
	if p.frozen > 0 {
		for _, so := range p.subs {
			if len(so.held) >= limit {
				blocked = true
			}
		}
	}
	if p.unreadN >= limit {
		blocked = true
	}
	return blocked
}

// buffered returns the number of records waiting to be sent, including
// those waiting for a reader.
func (p *producer) buffered() int {
	n := p.unreadN
	for _, b := range p.dirty {
		n += b.recs.Len()
	}
	if p.frozen > 0 {
		for _, so := range p.subs {
			n += len(so.held)
		}
	}
	return n
}

func (p *producer) send(b *outBuf, recs []core.Record) {
	b.inflight++
	b.sent++
	if b.dest.Address == p.table.local {
		p.node.queued.Add(int64(len(recs)))
		m := &batchMsg{stream: b.stream, routing: b.routing, from: p.self, slot: b.slot, records: recs, seq: b.sent}
		if b.local != nil {
			b.local.queued.Add(int64(len(recs)))
			m.counted = b.local
		}
		if p.node.cfg.Observer != nil {
			m.sent = time.Now()
		}
		p.node.system.Root.Send(b.dest, m)
		return
	}
	wb := toWireBatch(b.dest.Id, b.stream, b.routing, p.self, b.slot, recs)
	wb.Seq = b.sent
	if p.node.cfg.Observer != nil {
		wb.SentUnixNano = time.Now().UnixNano()
	}
	p.node.system.Root.Send(actor.NewPID(b.dest.Address, dispatcherName), wb)
}

// ack returns a credit to slot's buffer.
func (p *producer) ack(slot int32) {
	if int(slot) >= len(p.slots) {
		return
	}
	b := p.slots[slot]
	if b.inflight > 0 {
		b.inflight--
	}
	if b.retired && b.inflight == 0 {
		p.settleOld(b.owner)
	}
}

// durableAck records that slot's batches up to seq are durable.
func (p *producer) durableAck(slot int32, seq uint64) {
	if int(slot) < len(p.slots) && seq > p.slots[slot].durable {
		p.slots[slot].durable = seq
	}
}

// bounce takes back a batch the destination did not process: its records
// are held for the subscription's next layout, ahead of newer records.
// It returns the buffer the batch came from.
func (p *producer) bounce(slot int32, recs []core.Record) *outBuf {
	if int(slot) >= len(p.slots) {
		return nil
	}
	b := p.slots[slot]
	if b.inflight > 0 {
		b.inflight--
	}
	so := b.owner
	p.refresh()
	if !b.retired {
		// The destination moved on before this producer saw a new table,
		// or has not yet placed the instance: hold everything until a new
		// table arrives or bounceRetry passes.
		so.needTable = true
		so.retryAt = time.Now().Add(bounceRetry)
		p.freeze(so)
	}
	so.held = append(append(make([]core.Record, 0, len(recs)+len(so.held)), recs...), so.held...)
	p.settleOld(so)
	return b
}

// settleOld drops drained old buffers and thaws so when it can.
func (p *producer) settleOld(so *subOut) {
	keep := so.old[:0]
	for _, b := range so.old {
		if b.inflight > 0 {
			keep = append(keep, b)
		}
	}
	so.old = keep
	p.maybeThaw(so)
}
