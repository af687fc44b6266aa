package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/actors/transport"
	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/internal/core"
)

// dispatcherName is the actor id of every node's dispatcher.
const dispatcherName = "sluice-dispatch"

// dispatcher is where everything of the data plane that crosses nodes
// arrives: record batches for the instances here, and acks, bounces and
// durable acks for the producers here. It converts each wire message into
// the runtime's own message type (batchMsg, ackMsg, bounceMsg,
// durableMsg), so instances handle one type per meaning, and hands it to
// its target. A batch for an instance that does not exist here (the
// producer's route table is ahead of this node's placement, or behind it)
// is bounced to its producer.
type dispatcher struct{ n *Node }

// Receive dispatches one message.
func (d dispatcher) Receive(ctx actor.Context) {
	n := d.n
	switch m := ctx.Message().(type) {
	case *wire.BatchFrame:
		rb, err := m.Batch()
		if err != nil {
			// Only a frame sent within this process gets here unparsed
			// (protoactor's receiver drops, with the connection, what
			// does not parse), and EncodeFrame made it: a bug. Nothing
			// names the producer to return its credit to.
			n.log.Error("dropped a record batch frame that does not parse", "error", err)
			return
		}
		d.batch(rb)
	case *wire.Ack:
		n.toProducer(m.Target, ackMsg{slot: m.Slot})
	case *wire.DurableAck:
		n.toProducer(m.Target, durableMsg{slot: m.Slot, seq: m.Seq, rewound: m.Rewound})
	case *wire.Bounce:
		recs, err := wire.DecodeRecords(m.Records)
		if err != nil {
			// Nothing can be salvaged; the credit is returned so that the
			// producer does not stall.
			n.log.Error("dropped a corrupt bounce", "to", m.Target, "error", err)
			n.toProducer(m.Target, ackMsg{slot: m.Slot})
			return
		}
		n.toProducer(m.Target, bounceMsg{slot: m.Slot, seq: m.Seq, records: recs, control: fromWireControl(m.Control)})
	}
}

// batch hands a record batch to its instance, or bounces it.
func (d dispatcher) batch(m *wire.RecordBatch) {
	n := d.n
	n.arrivals.Add(1)
	from := flow.Endpoint{}
	if m.From != nil {
		from = flow.Endpoint{Addr: m.From.Address, ID: m.From.Id}
	}
	// Batches between nodes hold up to RemoteBatchSize records.
	recs, err := wire.AppendDecoded(flow.NewChunk(n.cfg.RemoteBatchSize), m.Records)
	if err != nil {
		// A corrupt batch from a peer: nothing can be salvaged, and the
		// producer's credit is returned so that it does not stall.
		n.log.Error("dropped a corrupt record batch", "from", from.String(), "stream", m.Stream, "error", err)
		n.replyAck(from, m.Slot)
		return
	}
	var inst *instance
	if target, ok := transport.Ours(m.Target, n.incarnation); ok {
		inst = n.lookup(target)
	} else {
		// Meant for another process that had this address: bounced like
		// a batch for an instance not placed here, so its producer routes
		// it again.
		n.misaddressed.Refused(n.log, m.Target, from.String())
	}
	if inst == nil {
		flow.Recycle(recs)
		n.replyWire(from, &wire.Bounce{Slot: m.Slot, Seq: m.Seq, Records: m.Records, Target: from.ID, Control: m.Control})
		return
	}
	b := &flow.Batch{Stream: m.Stream, Routing: core.Routing(m.Routing), From: from, FromOp: m.FromOp, FromIndex: int(m.FromIndex), FromEpoch: m.FromEpoch,
		Slot: m.Slot, Seq: m.Seq, Records: recs, Control: fromWireControl(m.Control), Gen: m.Generation}
	if m.SentUnixNano != 0 {
		b.Sent = time.Unix(0, m.SentUnixNano)
	}
	n.deliver(inst, &batchMsg{Batch: b, remote: true})
}

// toProducer hands a reply to the producer on this node that target
// addresses (see addressed): an instance, or the ingress.
func (n *Node) toProducer(target string, msg any) {
	id, ok := transport.Ours(target, n.incarnation)
	if !ok {
		// A reply to a batch that another process at this address sent
		// (before this one started): no producer here sent it, and taking
		// a bounce's records would route records twice.
		n.misaddressed.Refused(n.log, target, "")
		return
	}
	if id == n.ingress.pid.Id {
		n.system.Root.Send(n.ingress.pid, msg)
		return
	}
	if inst := n.lookup(id); inst != nil {
		n.system.Root.Send(inst.pid, msg)
		return
	}
	// The producer is gone (its instance was removed): nothing waits for
	// the reply.
}

// deliver queues batch m for instance inst, counting its records as queued
// there until they are processed or bounced.
func (n *Node) deliver(inst *instance, m *batchMsg) {
	if !m.remote {
		n.arrivals.Add(1) // remote ones were counted by the dispatcher
	}
	k := int64(len(m.Records))
	n.queued.Add(k)
	inst.pub.queued.Add(k)
	m.counted = inst
	n.system.Root.Send(inst.pid, m)
}

// replyAck returns a credit to a producer.
func (n *Node) replyAck(to flow.Endpoint, slot int32) {
	if to.Addr == n.addr {
		n.toProducer(to.ID, ackMsg{slot: slot})
		return
	}
	n.replyWire(to, &wire.Ack{Slot: slot, Target: to.ID})
}

// replyBounce returns an unprocessed batch (records and control) to its
// producer.
func (n *Node) replyBounce(to flow.Endpoint, slot int32, seq uint64, recs []core.Record, c *flow.Control) {
	if to.Addr == n.addr {
		n.toProducer(to.ID, bounceMsg{slot: slot, seq: seq, records: recs, control: c})
		return
	}
	n.replyWire(to, &wire.Bounce{Slot: slot, Seq: seq, Records: wire.AppendRecords(nil, recs), Target: to.ID, Control: toWireControl(c)})
}

// replyDurable sends a durable ack (or, with rewound, a rewound ack) to a
// producer.
func (n *Node) replyDurable(to flow.Endpoint, slot int32, seq uint64, rewound bool) {
	if to.Addr == n.addr {
		n.toProducer(to.ID, durableMsg{slot: slot, seq: seq, rewound: rewound})
		return
	}
	n.replyWire(to, &wire.DurableAck{Slot: slot, Seq: seq, Rewound: rewound, Target: to.ID})
}

// replyWire sends a reply to the dispatcher of the producer's node.
func (n *Node) replyWire(to flow.Endpoint, msg any) {
	if to.Addr == "" {
		return // no producer (a batch from outside the data plane)
	}
	n.system.Root.Send(actor.NewPID(to.Addr, dispatcherName), msg)
}
