package actors

import (
	"log/slog"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/actors/transport"
	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/internal/core"
)

// localDest is an instance on this node: batches go straight to its
// mailbox.
type localDest struct {
	n    *Node
	inst *instance
	ep   flow.Endpoint
}

var _ flow.Dest = (*localDest)(nil)

func (d *localDest) Endpoint() flow.Endpoint { return d.ep }

// Remote implements flow.Dest: the instance is on this node.
func (d *localDest) Remote() bool { return false }

// Send queues b in the instance's mailbox.
func (d *localDest) Send(b *flow.Batch) { d.n.deliver(d.inst, &batchMsg{Batch: b}) }

// remoteDest is an instance on another node: batches go, packed, to that
// node's dispatcher.
type remoteDest struct {
	n          *Node
	ep         flow.Endpoint
	target     string // ep.ID addressed to the node process (see addressed)
	dispatcher *actor.PID
}

var _ flow.Dest = (*remoteDest)(nil)

func (d *remoteDest) Endpoint() flow.Endpoint { return d.ep }

// Remote implements flow.Dest: the instance is on another node.
func (d *remoteDest) Remote() bool { return true }

// Send encodes b and sends it over protoactor remote.
func (d *remoteDest) Send(b *flow.Batch) {
	wb := &wire.RecordBatch{Target: d.target, Stream: b.Stream, Routing: int32(b.Routing), Slot: b.Slot, Seq: b.Seq,
		From: actor.NewPID(b.From.Addr, b.From.ID), FromOp: b.FromOp, FromIndex: int32(b.FromIndex), FromEpoch: b.FromEpoch,
		Control: toWireControl(b.Control), Generation: b.Gen}
	if !b.Sent.IsZero() {
		wb.SentUnixNano = b.Sent.UnixNano()
	}
	d.n.system.Root.Send(d.dispatcher, wire.EncodeFrame(wb, b.Records))
	flow.Recycle(b.Records) // encoded: nothing reads them any more
	b.Records = nil
}

// newDest returns the destination of the instance with actor id id on the
// node process with actor address addr and incarnation inc (empty when
// its member record names none).
func (n *Node) newDest(addr, inc, id string) flow.Dest {
	ep := flow.Endpoint{Addr: addr, ID: id}
	if addr == n.addr {
		if inst := n.lookup(id); inst != nil {
			return &localDest{n: n, inst: inst, ep: ep}
		}
		// Not spawned here (yet): go through the dispatcher, which
		// bounces what it cannot deliver.
	}
	return &remoteDest{n: n, ep: ep, target: transport.Addressed(id, inc), dispatcher: actor.NewPID(addr, dispatcherName)}
}

// host adapts a Node to flow.Host.
type host struct{ n *Node }

var _ flow.Host = host{}

func (h host) Table() *flow.Table               { return h.n.table.Load() }
func (h host) Dropped(stream string, count int) { h.n.dropped(stream, count) }
func (h host) Held(stream string) *atomic.Int64 { return &h.n.streams.counter(stream).held }
func (h host) Logger() *slog.Logger             { return h.n.log }
func (h host) LostInFlight(stream string, to flow.Endpoint, batches int, gen uint64) {
	h.n.lostInFlight(stream, to, batches, gen)
}

// flowConfig is the producers' configuration.
func (n *Node) flowConfig() flow.Config {
	return flow.Config{BatchSize: n.cfg.BatchSize, RemoteBatchSize: n.cfg.RemoteBatchSize, BatchBytes: n.cfg.BatchBytes, Credits: n.cfg.Credits, RemoteCredits: n.cfg.RemoteCredits, BufferBatches: n.cfg.BufferBatches,
		HoldUnread: n.guarantee() != core.NoGuarantee, StampSent: n.cfg.Observer != nil}
}
