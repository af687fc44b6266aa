package actors

import (
	"crypto/rand"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/ckpt"
	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/actors/handoff"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/actors/transport"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/topology"
)

// The node's side of placement and state handoff: it starts the
// coordinator (package actors/handoff), answers what it asks of the node
// (handoffNode) and builds the route table it publishes.

// metaIncarnation is the member metadata key of a node process's
// incarnation: random, new every time the node starts, so that the others
// can tell a restart under the same id from the same process.
const metaIncarnation = "incarnation"

// newIncarnation returns a fresh incarnation.
func newIncarnation() string { return rand.Text() }

// releasedLinger is how long a released instance stays to bounce records
// from producers whose route table is stale.
var releasedLinger = time.Minute // a variable for tests

// startCoordinator starts the node's coordinator with topology topo.
func (n *Node) startCoordinator(topo topology.Topology) error {
	n.coordImpl = handoff.New(handoff.Params{NodeID: n.cfg.NodeID, Addr: n.addr, Root: n.system.Root, DB: n.db, Log: n.log,
		Checkpointer: n.ckpt, Settle: n.cfg.settle(), ExactlyOnce: n.cfg.Checkpoints != nil, AtLeastOnce: n.cfg.AtLeastOnce,
		StateLog: n.cfg.StateLog != nil, IncarnationKey: metaIncarnation, ReleasedLinger: releasedLinger,
		Topo: topo, Held: n.loadHeld(), Gen: n.gen.Load()}, handoffNode{n})
	var err error
	n.coord, err = handoff.Spawn(n.system.Root, n.coordImpl)
	return err
}

// handoffInst returns inst as the coordinator sees it.
func handoffInst(inst *instance) handoff.Instance {
	return handoff.Instance{Key: inst.key.ckKey(), PID: inst.pid, Lo: inst.lo, Hi: inst.hi}
}

// handoffNode is the node as its coordinator sees it (handoff.Node).
type handoffNode struct{ n *Node }

var _ handoff.Node = handoffNode{}

func (h handoffNode) Spawn(spec topology.OperatorSpec, index int) (handoff.Instance, error) {
	op, err := h.n.operator(spec)
	if err != nil {
		return handoff.Instance{}, err
	}
	inst, err := op.spawn(h.n.life, spec, index)
	if err != nil {
		return handoff.Instance{}, err
	}
	return handoffInst(inst), nil
}

// Remove stops and forgets the instance (one the coordinator spawned and
// released: it is registered until removed here).
func (h handoffNode) Remove(hi handoff.Instance) {
	h.n.mu.Lock()
	inst := h.n.byID[hi.PID.Id]
	h.n.mu.Unlock()
	if inst == nil {
		return
	}
	inst.op.remove(inst)
	h.n.forgetTail(inst.op)
}

func (h handoffNode) send(inst handoff.Instance, msg any) { h.n.system.Root.Send(inst.PID, msg) }

func (h handoffNode) Release(inst handoff.Instance) { h.send(inst, releaseMsg{}) }
func (h handoffNode) Acquire(inst handoff.Instance) { h.send(inst, acquireMsg{}) }
func (h handoffNode) Rewind(inst handoff.Instance)  { h.send(inst, rewindMsg{}) }

func (h handoffNode) SetSpec(inst handoff.Instance, spec topology.OperatorSpec) {
	h.send(inst, specMsg{spec: spec})
}

func (h handoffNode) Activate(inst handoff.Instance, gen uint64, restore, fromCheckpoint bool) {
	h.send(inst, activateMsg{gen: gen, restore: restore, checkpoint: fromCheckpoint})
}

func (h handoffNode) Restore(inst handoff.Instance, gen uint64, meta *checkpoint.Meta) {
	h.send(inst, restoreMsg{gen: gen, meta: meta})
}

// Publish builds and publishes the route table for owners.
func (h handoffNode) Publish(owners map[ckpt.Key]string, members []cluster.Member, topo topology.Topology) {
	n := h.n
	addr := make(map[string]string)
	inc := make(map[string]string)
	live := make(map[string]bool)
	for _, m := range members {
		addr[m.ID] = m.Address
		inc[m.ID] = m.Meta[metaIncarnation]
		live[m.Address] = true
	}
	t := &flow.Table{Streams: make(map[string][]*flow.Subscription), Live: live, Local: n.addr, Version: 1}
	if old := n.table.Load(); old != nil {
		t.Version = old.Version + 1
	}
	for _, spec := range topo.Operators {
		m := spec.Meta
		dests := make([]flow.Dest, m.Parallelism) // shared by the operator's subscriptions
		for idx := range dests {
			k := instKey{op: m.Name, epoch: spec.Epoch, index: idx}
			if id, ok := owners[k.ckKey()]; ok && addr[id] != "" {
				dests[idx] = n.newDest(addr[id], inc[id], k.pidID())
			}
		}
		for _, in := range m.Inputs {
			s := &flow.Subscription{Stream: in.Stream, Operator: m.Name, Epoch: spec.Epoch, Routing: in.Routing, KeyGroups: m.KeyGroups, Dests: dests}
			t.Streams[in.Stream] = append(t.Streams[in.Stream], s)
		}
	}
	n.table.Store(t)
	n.topo.Store(&topo)
}

func (h handoffNode) Routed(local []handoff.Instance) {
	for _, inst := range local {
		h.send(inst, routesMsg{})
	}
	h.n.ingress.refresh()
}

func (h handoffNode) Generation() uint64                  { return h.n.gen.Load() }
func (h handoffNode) Base() *checkpoint.Meta              { return h.n.base.Load() }
func (h handoffNode) NoteCrashed(addr string)             { h.n.noteCrashed(addr) }
func (h handoffNode) SpeaksFor(peer, node string) bool    { return transport.SpeaksFor(peer, node) }
func (h handoffNode) Go(f func())                         { h.n.goFunc(f) }
func (h handoffNode) AfterFunc(d time.Duration, f func()) { h.n.afterFunc(d, f) }
func (h handoffNode) MemberJoined(id string)              { h.n.memberEvent(status.EventMemberJoined, id) }
func (h handoffNode) MemberLeft(id string)                { h.n.memberEvent(status.EventMemberLeft, id) }
func (h handoffNode) NodeLost(id string) {
	h.n.journal.Record(status.Event{What: status.EventNodeLost, Peer: id})
}

func (h handoffNode) Vouched(ctx actor.Context, what, claimed string) bool {
	return h.n.vouched(ctx, what, claimed)
}

// Peer returns the certificate the message came over; "" without
// transport TLS.
func (h handoffNode) Peer(ctx actor.Context) string {
	if h.n.transport == nil {
		return ""
	}
	return transport.PeerOf(ctx)
}

func (h handoffNode) Tick(pid *actor.PID, every time.Duration, msg any) func() {
	return h.n.tickSelf(pid, every, msg).stop
}

func (h handoffNode) TopologyEvents(old, cur topology.Topology) { h.n.journal.Topology(old, cur) }

func (h handoffNode) RestoredAtStart(id uint64, byOp map[string]int) {
	h.n.journal.Restored(id, byOp, "as they started here", 0)
}
