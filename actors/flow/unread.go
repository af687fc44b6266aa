package flow

import (
	"sync/atomic"

	"github.com/sluicehq/sluice/internal/core"
)

// unreadStream holds the records produced to one stream while no operator
// read it.
type unreadStream struct {
	stream string
	recs   []core.Record
	mark   int // len(recs) at the start of the current attempt
	held   *atomic.Int64
}

// noReader takes a record produced to a stream that no operator reads in
// the adopted table. If a newer table (not adopted yet: the layout stays
// fixed during an attempt) has a reader, the record is held and delivered
// when the table is adopted, in every mode. Otherwise it is held when the
// Producer holds unread records (except dead letters), else dropped and
// counted.
func (p *Producer) noReader(stream string, rec core.Record) {
	if !p.keepUnread(stream) {
		if latest := p.host.Table(); latest == p.table || len(latest.Routes(stream)) == 0 {
			p.host.Dropped(stream, 1)
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
		u = &unreadStream{stream: stream, held: p.host.Held(stream)}
		p.unread = append(p.unread, u)
	}
	u.recs = append(u.recs, rec)
	u.held.Add(1)
	p.unreadN++
}

// keepUnread reports whether records of stream wait for a reader rather
// than being dropped when it has none.
func (p *Producer) keepUnread(stream string) bool {
	return p.cfg.HoldUnread && !core.IsDeadLetterStream(stream)
}

// deliverUnread routes the held records of streams that have readers in
// the adopted table, in the order they were produced and ahead of anything
// produced later; those of streams that still have none are dropped unless
// they are to be kept.
func (p *Producer) deliverUnread() {
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
			p.host.Dropped(u.stream, len(u.recs))
		}
		u.held.Add(-int64(len(u.recs)))
		p.unreadN -= len(u.recs)
	}
	clear(p.unread[len(keep):])
	p.unread = keep
}

// rollbackUnread discards the unread records held since Begin.
func (p *Producer) rollbackUnread() {
	for _, u := range p.unread {
		if n := len(u.recs) - u.mark; n > 0 {
			clear(u.recs[u.mark:])
			u.recs = u.recs[:u.mark]
			u.held.Add(-int64(n))
			p.unreadN -= n
		}
	}
}
