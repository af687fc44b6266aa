package flow

import (
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/placement"
)

// Config tunes a Producer. Zero fields are invalid; the runtime fills them
// from its own configuration.
type Config struct {
	// BatchSize is the number of records per batch when there is enough
	// traffic.
	BatchSize int
	// RemoteBatchSize is BatchSize for a destination on another node
	// (Dest.Remote), where each batch costs more (an envelope, a gRPC
	// frame, an ack back across the network); 0 means BatchSize.
	RemoteBatchSize int
	// BatchBytes, when positive, also ends a batch at that many bytes of
	// records (RecordBytes): a record that would take a batch past it goes
	// in the next one, so a batch is at most BatchBytes or one record.
	BatchBytes int
	// Credits is the number of unacknowledged batches per destination.
	Credits int
	// RemoteCredits is Credits for a destination on another node
	// (Dest.Remote): a batch and its ack take longer there and back, so
	// more batches must be in flight to keep the destination busy. 0
	// means Credits.
	RemoteCredits int
	// BufferBatches is how many batches a destination's buffer may hold
	// beyond its credits before the Producer reports itself blocked.
	BufferBatches int
	// HoldUnread keeps the records of streams nobody reads until a reader
	// appears, instead of dropping them (durability tracking).
	HoldUnread bool
	// StampSent sets Batch.Sent (tracing).
	StampSent bool
	// Operator, Index and Epoch name the producing instance in its
	// batches (Batch.FromOp, Batch.FromIndex, Batch.FromEpoch); empty for
	// records from outside.
	Operator string
	Index    int
	Epoch    int64
}

// Host is what a Producer needs from the node it runs on. Its methods are
// called from the Producer's goroutine and must be safe for concurrent use
// across Producers.
type Host interface {
	// Table returns the latest published route table (nil before the
	// first).
	Table() *Table
	// Dropped counts n records of stream dropped for want of a reader.
	Dropped(stream string, n int)
	// Held returns the counter of stream's records held for want of a
	// reader, which the Producer adds to and subtracts from.
	Held(stream string) *atomic.Int64
	// Logger receives the Producer's warnings.
	Logger() *slog.Logger
	// LostInFlight hears that the Producer gave up on batches batches of
	// stream, stamped with generation gen (see SetGeneration), in flight
	// to to, whose node left the cluster.
	LostInFlight(stream string, to Endpoint, batches int, gen uint64)
}

// Producer is the sending side of one operator instance (or of the node's
// ingress). It is not safe for concurrent use: one goroutine (the
// instance's) calls every method.
type Producer struct {
	host Host
	cfg  Config
	self Endpoint // receives the acks and bounces

	table    *Table
	streams  map[string][]*subOut // stream → one entry per subscribing operator
	subs     map[subKey]*subOut   // the same entries, by stream and operator
	slots    []*Buf               // every buffer ever made, indexed by slot
	rng      *rand.Rand           // shuffle routing
	dirty    []*Buf               // buffers holding unsent records or controls
	mark     []int                // len(recs) of dirty buffers at the start of an attempt
	anyReady bool                 // some buffer got a full or closed chunk since the last flush
	frozen   int                  // number of frozen subscriptions

	lastStream string    // the stream of the previous Produce call …
	lastOuts   []*subOut // … and its subscriptions, to skip the map lookup

	unread  []*unreadStream // records of streams nobody reads, held
	unreadN int             // records in unread

	gen uint64 // stamped on every batch
}

// SetGeneration stamps later batches with gen: after a rollback, receivers
// drop batches of earlier generations.
func (p *Producer) SetGeneration(gen uint64) { p.gen = gen }

type subKey struct{ stream, operator string }

// subOut is a Producer's view of one subscription.
type subOut struct {
	sub  *Subscription
	bufs []*Buf // by instance index, current layout
	next int    // round-robin position

	// While frozen: records waiting for the old layout to drain, in order,
	// and the buffers of old layouts with batches still in flight.
	frozen    bool
	needTable bool      // a bounce showed the layout is stale: wait for a new table …
	retryAt   time.Time // … or until this time, then try the same layout again
	held      []core.Record
	heldMark  int      // len(held) at the start of the current attempt
	heldCtl   *Control // the control to send after held, once thawed
	old       []*Buf
}

// Buf buffers records for one destination instance. Its slot numbers it
// among the Producer's buffers; batches from it carry the slot so that
// acks and bounces find it.
type Buf struct {
	slot     int32
	stream   string
	routing  core.Routing
	dest     Dest // nil when no node hosts the instance
	owner    *subOut
	retired  bool // belongs to a previous layout of owner
	recs     recBuf
	inflight int    // batches sent and not yet acknowledged or bounced
	isDirty  bool   // listed in Producer.dirty
	sent     uint64 // seq of the last batch sent
	durable  uint64 // highest seq acknowledged as durable
}

// Slot returns the buffer's slot.
func (b *Buf) Slot() int32 { return b.slot }

// Sent returns the seq of the last batch sent from b.
func (b *Buf) Sent() uint64 { return b.sent }

// Durable returns the highest seq acknowledged as durable.
func (b *Buf) Durable() uint64 { return b.durable }

// SetDurable records that b's batches up to seq are durable (or need no
// longer be waited for).
func (b *Buf) SetDurable(seq uint64) {
	if seq > b.durable {
		b.durable = seq
	}
}

// Unsent returns the number of batches b's buffered records and controls
// will take.
func (b *Buf) Unsent() int { return b.recs.Chunks() }

// New returns a Producer whose batches come from self.
func New(host Host, cfg Config, self Endpoint, seed uint64) *Producer {
	return &Producer{
		host:    host,
		cfg:     cfg,
		self:    self,
		streams: make(map[string][]*subOut),
		subs:    make(map[subKey]*subOut),
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
}

// Slots returns every buffer the Producer ever made, by slot.
func (p *Producer) Slots() []*Buf { return p.slots }

// Reads reports whether some operator reads stream in the adopted table.
func (p *Producer) Reads(stream string) bool { return len(p.streams[stream]) > 0 }

// Refresh adopts the latest table, if newer: subscriptions whose layout
// changed are frozen until the batches sent under the old layout have come
// back, and held records of streams that now have readers are routed.
func (p *Producer) Refresh() {
	t := p.host.Table()
	if p.table == t || t == nil {
		return
	}
	p.table = t
	p.lastStream, p.lastOuts = "", nil
	seen := make(map[subKey]bool)
	clear(p.streams)
	for stream, subs := range t.Streams {
		outs := make([]*subOut, 0, len(subs))
		for _, s := range subs {
			k := subKey{stream, s.Operator}
			seen[k] = true
			so := p.subs[k]
			switch {
			case so == nil:
				so = &subOut{sub: s}
				so.bufs = p.newBufs(so, s)
				p.subs[k] = so
			case so.needTable || !SameLayout(so.sub, s):
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

// newBufs makes the output buffers of a subscription layout.
func (p *Producer) newBufs(so *subOut, s *Subscription) []*Buf {
	bufs := make([]*Buf, len(s.Dests))
	for i, d := range s.Dests {
		size := p.cfg.BatchSize
		if d != nil && d.Remote() && p.cfg.RemoteBatchSize > 0 {
			size = p.cfg.RemoteBatchSize
		}
		b := &Buf{slot: int32(len(p.slots)), stream: s.Stream, routing: s.Routing, dest: d, owner: so, recs: recBuf{size: size, maxBytes: p.cfg.BatchBytes}}
		p.slots = append(p.slots, b)
		bufs[i] = b
	}
	return bufs
}

// freeze retires so's current buffers: their unsent records are held, and
// nothing more is sent until the retired buffers have no batch in flight.
func (p *Producer) freeze(so *subOut) {
	if !so.frozen {
		so.frozen = true
		p.frozen++
	}
	for _, b := range so.bufs {
		b.retired = true
		recs, ctls := b.recs.Drain()
		so.held = append(so.held, recs...)
		for _, c := range ctls {
			so.hold(c)
		}
		p.drop(b)
		if b.inflight > 0 {
			so.old = append(so.old, b)
		}
	}
	so.bufs = nil
}

// hold keeps c to be sent once so thaws (see Control.supersedes).
func (so *subOut) hold(c Control) {
	if c.Kind != Barrier && c.supersedes(so.heldCtl) {
		so.heldCtl = &c
	}
}

// drop empties b and removes it from the dirty list.
func (p *Producer) drop(b *Buf) {
	b.recs = recBuf{size: b.recs.size, maxBytes: b.recs.maxBytes}
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
// they are lost with the node, unless it bounces them after all (see
// Bounce).
func (p *Producer) forgetDead(so *subOut) {
	keep := so.old[:0]
	for _, b := range so.old {
		if b.inflight > 0 && b.dest != nil && !p.table.Live[b.dest.Endpoint().Addr] {
			p.host.LostInFlight(b.stream, b.dest.Endpoint(), b.inflight, p.gen)
			b.inflight = 0
		}
		if b.inflight > 0 {
			keep = append(keep, b)
		}
	}
	clear(so.old[len(keep):])
	so.old = keep
}

// RetryBounced gives up waiting for a new route table for subscriptions
// whose records were bounced long enough ago: the destination node may
// simply not have placed the instance yet. It reports whether any
// subscription is still waiting (the runtime calls it again after
// BounceRetry).
func (p *Producer) RetryBounced(now time.Time) (waiting bool) {
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

// BounceRetry is how long a Producer holds bounced records before trying
// the same layout again.
const BounceRetry = 50 * time.Millisecond

// maybeThaw routes so's held records under the current layout once nothing
// is in flight under an old one.
func (p *Producer) maybeThaw(so *subOut) {
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
	if c := so.heldCtl; c != nil {
		so.heldCtl = nil
		p.emitTo(so, *c)
	}
}

// Emit sends control c on every edge of the given streams (the producer's
// outputs), after every record produced to them so far. A subscription in
// the middle of a layout change gets it once the change is through,
// barriers excepted: the checkpoint cannot complete, and Emit returns how
// many subscriptions did not get the barrier, so that the caller has it
// abandoned. Call it between attempts.
func (p *Producer) Emit(c Control, streams []string) (dropped int) {
	for _, stream := range streams {
		for _, so := range p.streams[stream] {
			if !p.emitTo(so, c) {
				dropped++
			}
		}
	}
	return dropped
}

// emitTo appends c to every buffer of so's layout, or holds it while so is
// frozen; it reports false for a barrier that so, frozen, will not send.
func (p *Producer) emitTo(so *subOut, c Control) bool {
	if so.frozen {
		so.hold(c)
		return c.Kind != Barrier
	}
	for _, b := range so.bufs {
		if !b.isDirty {
			b.isDirty = true
			p.dirty = append(p.dirty, b)
			p.mark = append(p.mark, b.recs.Len())
		}
		b.recs.Close(c)
		p.anyReady = true
	}
	return true
}

// Produce routes rec to every operator subscribed to stream; a record of a
// stream nobody reads goes to noReader.
//
// The layout stays fixed during an attempt: a new table is adopted only by
// Refresh, between attempts. A record produced under a table that predates
// a new reader of its stream (a source's Poll may wait for data while the
// reader is deployed) is held or counted, never silently lost, and held
// records reach the reader once the table is adopted.
func (p *Producer) Produce(stream string, rec core.Record) {
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
func (p *Producer) routeAll(outs []*subOut, rec core.Record) {
	for _, so := range outs {
		if so.frozen {
			so.held = append(so.held, rec)
			continue
		}
		p.route(so, rec)
	}
}

// route appends rec to the buffer(s) its routing picks in so's layout.
func (p *Producer) route(so *subOut, rec core.Record) {
	switch so.sub.Routing {
	case core.GroupBy:
		kg := placement.KeyGroup(rec.Key, so.sub.KeyGroups)
		p.add(so.bufs[placement.InstanceFor(kg, so.sub.KeyGroups, len(so.bufs))], rec)
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

func (p *Producer) add(b *Buf, rec core.Record) {
	if !b.isDirty {
		b.isDirty = true
		p.dirty = append(p.dirty, b)
		p.mark = append(p.mark, b.recs.Len())
	}
	b.recs.Add(rec)
	if b.recs.Ready(false) {
		p.anyReady = true
	}
}

// Begin adopts the latest table and marks the start of an attempt: records
// produced after it can be discarded by Rollback.
func (p *Producer) Begin() {
	p.Refresh()
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

// Rollback discards the records produced since Begin.
func (p *Producer) Rollback() {
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
	p.rollbackUnread()
}

// Pending reports whether any record or control waits to be sent to a
// reader (records of streams nobody reads are not counted: they may wait
// forever).
func (p *Producer) Pending() bool {
	if p.frozen > 0 {
		return true
	}
	for _, b := range p.dirty {
		if !b.recs.Empty() {
			return true
		}
	}
	return false
}

// Inflight returns the number of batches sent and not yet acknowledged or
// bounced.
func (p *Producer) Inflight() int {
	n := 0
	for _, b := range p.slots {
		n += b.inflight
	}
	return n
}

// Unread returns the number of records held because no operator reads
// their stream.
func (p *Producer) Unread() int { return p.unreadN }

// Holding reports whether records wait for a layout change or for a
// reader, so that the batches they will travel in are not known yet.
func (p *Producer) Holding() bool { return p.frozen > 0 || p.unreadN > 0 }

// credits returns how many unacknowledged batches b's destination may
// have: RemoteCredits when it is on another node.
func (p *Producer) credits(b *Buf) int {
	if b.dest != nil && p.cfg.RemoteCredits > 0 && b.dest.Remote() {
		return p.cfg.RemoteCredits
	}
	return p.cfg.Credits
}

// Flush sends buffers that have credit: all of them when all is true, only
// full ones otherwise; a call with all false costs nothing when no buffer
// filled since the last Flush. It reports whether the Producer must stop
// taking input: a full buffer has no credit, or too many records are held
// by frozen subscriptions or for want of a reader.
func (p *Producer) Flush(all bool) (blocked bool) {
	if !all && !p.anyReady {
		return p.overLimit()
	}
	p.anyReady = false
	keep := p.dirty[:0]
	marks := p.mark[:0]
	for _, b := range p.dirty {
		credits := p.credits(b)
		for b.dest != nil && b.recs.Ready(all) && b.inflight < credits {
			recs, c := b.recs.Take()
			p.send(b, recs, c)
		}
		if b.recs.Empty() {
			b.isDirty = false
			continue
		}
		if b.recs.Ready(false) && (b.dest == nil || b.inflight >= credits) {
			p.anyReady = true
			if b.recs.Len() >= b.recs.size*p.cfg.BufferBatches || b.recs.Chunks() > p.cfg.BufferBatches {
				blocked = true
			}
		}
		keep = append(keep, b)
		marks = append(marks, b.recs.Len())
	}
	clear(p.dirty[len(keep):])
	p.dirty, p.mark = keep, marks
	return blocked || p.overLimit()
}

// overLimit reports whether held records alone block the Producer. A full
// buffer without credit also blocks; Flush finds that.
func (p *Producer) overLimit() bool {
	limit := p.cfg.BatchSize * p.cfg.BufferBatches
	if p.unreadN >= limit {
		return true
	}
	if p.frozen > 0 {
		for _, so := range p.subs {
			if len(so.held) >= limit {
				return true
			}
		}
	}
	return false
}

// Buffered returns the number of records waiting to be sent, including
// those waiting for a reader.
func (p *Producer) Buffered() int {
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

func (p *Producer) send(b *Buf, recs []core.Record, c *Control) {
	b.inflight++
	b.sent++
	m := &Batch{Stream: b.stream, Routing: b.routing, From: p.self, FromOp: p.cfg.Operator, FromIndex: p.cfg.Index, FromEpoch: p.cfg.Epoch,
		Slot: b.slot, Records: recs, Seq: b.sent, Control: c, Gen: p.gen}
	if p.cfg.StampSent {
		m.Sent = time.Now()
	}
	b.dest.Send(m)
}

// Ack returns a credit to slot's buffer.
func (p *Producer) Ack(slot int32) {
	if int(slot) >= len(p.slots) || slot < 0 {
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

// DurableAck records that slot's batches up to seq are durable.
func (p *Producer) DurableAck(slot int32, seq uint64) {
	if int(slot) < len(p.slots) && slot >= 0 {
		p.slots[slot].SetDurable(seq)
	}
}

// Bounce takes back a batch the destination did not process: its records
// are routed again under the subscription's next layout, ahead of newer
// records, and its control (c, if any) after them. It returns the buffer
// the batch came from (nil for an unknown slot).
func (p *Producer) Bounce(slot int32, recs []core.Record, c *Control) *Buf {
	if int(slot) >= len(p.slots) || slot < 0 {
		return nil
	}
	b := p.slots[slot]
	if b.inflight > 0 {
		b.inflight--
	}
	so := b.owner
	p.Refresh()
	if p.subs[subKey{so.sub.Stream, so.sub.Operator}] != so {
		// Its operator was killed: nothing reads these records any more.
		// Holding them (freezing a subscription no table will thaw) would
		// keep the Producer pending for ever, and a Stop waiting for it.
		return b
	}
	if !b.retired {
		// The destination moved on before this Producer saw a new table,
		// or has not yet placed the instance: hold everything until a new
		// table arrives or BounceRetry passes.
		so.needTable = true
		so.retryAt = time.Now().Add(BounceRetry)
		p.freeze(so)
	}
	if !so.frozen {
		// The subscription thawed before this bounce came back (its batch
		// had been given up as lost with a node that left): nothing of
		// the old layout is in flight, so the records go out now.
		for _, rec := range recs {
			p.route(so, rec)
		}
		if c != nil && c.Kind != Barrier {
			_ = p.emitTo(so, *c) // not a barrier: always taken
		}
		return b
	}
	so.held = append(append(make([]core.Record, 0, len(recs)+len(so.held)), recs...), so.held...)
	if c != nil {
		so.hold(*c)
	}
	p.settleOld(so)
	return b
}

// settleOld drops drained old buffers and thaws so when it can.
func (p *Producer) settleOld(so *subOut) {
	keep := so.old[:0]
	for _, b := range so.old {
		if b.inflight > 0 {
			keep = append(keep, b)
		}
	}
	clear(so.old[len(keep):])
	so.old = keep
	p.maybeThaw(so)
}
