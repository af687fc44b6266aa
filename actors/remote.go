package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/internal/core"
)

func toWireBatch(target string, stream string, routing core.Routing, from *actor.PID, slot int32, recs []core.Record) *wire.RecordBatch {
	return &wire.RecordBatch{Target: target, Stream: stream, Routing: int32(routing), From: from, Slot: slot, Records: wire.AppendRecords(nil, recs)}
}

// dispatcherName is the actor id of every node's dispatcher.
const dispatcherName = "sluice-dispatch"

// dispatcher receives every record batch that arrives from another node and
// hands it to the target instance, or bounces it to its producer when the
// instance does not exist here (the producer's route table is ahead of this
// node's placement, or behind it).
type dispatcher struct{ n *Node }

// Receive dispatches one batch.
func (d dispatcher) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*wire.RecordBatch)
	if !ok {
		return
	}
	recs, err := wire.DecodeRecords(m.Records)
	if err != nil {
		// A corrupt batch from a peer: nothing can be salvaged, and the
		// producer's credit is returned so that it does not stall.
		d.n.log.Error("dropped a corrupt record batch", "from", m.From.String(), "stream", m.Stream, "error", err)
		if m.From != nil {
			d.n.system.Root.Send(m.From, &wire.Ack{Slot: m.Slot})
		}
		return
	}
	if inst := d.n.lookup(m.Target); inst != nil {
		d.n.queued.Add(int64(len(recs)))
		inst.queued.Add(int64(len(recs)))
		b := fromWireBatch(m, recs)
		b.counted = inst
		d.n.system.Root.Send(inst.pid, b)
		return
	}
	if m.From != nil {
		d.n.system.Root.Send(m.From, &wire.Bounce{Slot: m.Slot, Seq: m.Seq, Records: m.Records})
	}
}

func fromWireBatch(m *wire.RecordBatch, recs []core.Record) *batchMsg {
	b := &batchMsg{stream: m.Stream, routing: core.Routing(m.Routing), from: m.From, slot: m.Slot, records: recs, remote: true, seq: m.Seq}
	if m.SentUnixNano != 0 {
		b.sent = time.Unix(0, m.SentUnixNano)
	}
	return b
}

// replyAck returns a credit to a producer, locally or over the wire.
func (n *Node) replyAck(to *actor.PID, slot int32) {
	if to.Address == n.addr {
		n.system.Root.Send(to, ackMsg{slot: slot})
		return
	}
	n.system.Root.Send(to, &wire.Ack{Slot: slot})
}

// replyBounce returns unprocessed records to their producer.
func (n *Node) replyBounce(to *actor.PID, slot int32, seq uint64, recs []core.Record) {
	if to.Address == n.addr {
		n.system.Root.Send(to, bounceMsg{slot: slot, seq: seq, records: recs})
		return
	}
	n.system.Root.Send(to, &wire.Bounce{Slot: slot, Seq: seq, Records: wire.AppendRecords(nil, recs)})
}
