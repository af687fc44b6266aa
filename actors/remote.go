package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/internal/core"
)

// toWireRecords converts records for the wire.
func toWireRecords(recs []core.Record) []*wire.Record {
	out := make([]*wire.Record, len(recs))
	backing := make([]wire.Record, len(recs))
	for i, r := range recs {
		w := &backing[i]
		w.Key, w.Value = r.Key, r.Value
		if !r.EventTime.IsZero() {
			w.EventTimeUnixNano = r.EventTime.UnixNano()
		}
		if len(r.Headers) > 0 {
			w.Headers = make([]*wire.Header, len(r.Headers))
			for j, h := range r.Headers {
				w.Headers[j] = &wire.Header{Key: h.Key, Value: h.Value}
			}
		}
		out[i] = w
	}
	return out
}

// fromWireRecords converts records received from the wire.
func fromWireRecords(ws []*wire.Record) []core.Record {
	out := make([]core.Record, len(ws))
	for i, w := range ws {
		r := core.Record{Key: w.Key, Value: w.Value}
		if w.EventTimeUnixNano != 0 {
			r.EventTime = time.Unix(0, w.EventTimeUnixNano)
		}
		if len(w.Headers) > 0 {
			r.Headers = make([]core.Header, len(w.Headers))
			for j, h := range w.Headers {
				r.Headers[j] = core.Header{Key: h.Key, Value: h.Value}
			}
		}
		out[i] = r
	}
	return out
}

func toWireBatch(target string, stream string, routing core.Routing, from *actor.PID, slot int32, recs []core.Record) *wire.RecordBatch {
	return &wire.RecordBatch{Target: target, Stream: stream, Routing: int32(routing), From: from, Slot: slot, Records: toWireRecords(recs)}
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
	if inst := d.n.lookup(m.Target); inst != nil {
		d.n.queued.Add(int64(len(m.Records)))
		d.n.system.Root.Send(inst.pid, fromWireBatch(m))
		return
	}
	if m.From != nil {
		d.n.system.Root.Send(m.From, &wire.Bounce{Slot: m.Slot, Records: m.Records})
	}
}

func fromWireBatch(m *wire.RecordBatch) *batchMsg {
	return &batchMsg{stream: m.Stream, routing: core.Routing(m.Routing), from: m.From, slot: m.Slot, records: fromWireRecords(m.Records), remote: true}
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
func (n *Node) replyBounce(to *actor.PID, slot int32, recs []core.Record) {
	if to.Address == n.addr {
		n.system.Root.Send(to, bounceMsg{slot: slot, records: recs})
		return
	}
	n.system.Root.Send(to, &wire.Bounce{Slot: slot, Records: toWireRecords(recs)})
}
