package actors

import (
	"crypto/rand"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/ckpt"
	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/placement"
	"github.com/sluicehq/sluice/topology"
)

// coordinatorName is the actor id of every node's coordinator.
const coordinatorName = "sluice-coordinator"

// The coordinator is the actor that decides, on each node, which operator
// instances run there, and moves their state.
//
// On every membership or topology change it computes the placement (a pure
// function of both, the same on every node), spawns the instances placed
// here in awaiting mode, releases the ones placed elsewhere, and publishes a
// new route table. An awaiting instance becomes active only when every
// member has answered its HandoffRequest with DONE: a member answers
// NOT_YET while it still runs an overlapping instance itself (its view is
// behind), and DONE once it has shipped every overlapping key group it
// held, as HandoffChunks that the requester writes to its own database.
// So an instance is never active on two nodes at once, and its state moves
// with it (a rollback keeps that: see onRolledBack). A member that leaves the membership (crash) counts as DONE: what
// it held is lost, and the instance starts from what this node has.
type coordinator struct {
	n      *Node
	selfID string

	members     []cluster.Member // latest applied view
	pending     []cluster.Member // received, waiting for the settle delay
	haveView    bool
	applyQueued bool
	leaving     map[string]bool // node ids that announced they are leaving
	haveSeen    map[string]bool // node ids ever in an applied view
	topo        topology.Topology

	local     map[instKey]*localInst
	acq       map[uint64]*acquisition  // by id, including abandoned ones
	current   map[instKey]*acquisition // the live acquisition of each awaiting instance
	held      map[string][]bool        // op → key groups whose data this node holds
	startup   map[string][]bool        // op → key groups held at start, not yet restored (exactly-once)
	crashed   []string                 // members that left without announcing it, not yet told to the checkpointer
	shipping  map[string][]bool        // op → key groups being exported now
	purged    map[string]bool          // killed operators whose state was purged here
	waiting   []*wire.HandoffRequest
	exporting map[string]bool // requester|op|first|end of exports in progress

	nextAcq uint64 // id of the last acquisition started
	// gen is the rollback generation whose stale state this node has
	// dropped (onRolledBack): while the node's generation is newer, a
	// rollback is under way here and what it holds may be from after the
	// checkpoint, so it neither ships nor takes state, nor activates.
	gen uint64

	ready  chan struct{} // closed after the first placement
	ticker *ticker       // sends tickMsg (ticker.go)
}

// localInst is the coordinator's record of an instance on this node.
type localInst struct {
	inst       *instance
	state      localState
	releasedAt time.Time
	revision   int64 // the spec revision last sent to inst
}

type localState uint8

const (
	lsAwaiting localState = iota
	lsActive
	lsReleasing
	lsReleased
)

// Coordinator messages from this node.
type (
	membershipMsg    struct{ members []cluster.Member }
	applyMsg         struct{}
	topologyMsg      struct{ topo topology.Topology }
	instanceReleased struct{ key instKey }
	exportDone       struct {
		req  *wire.HandoffRequest
		runs [][2]int
		err  error
		key  string
	}
	tickMsg  struct{}
	leaveMsg struct{}
	// coordStateMsg asks for a snapshot of what the coordinator holds.
	coordStateMsg struct{ reply chan<- coordState }
)

// coordState is a snapshot for Node.Leave and status.
type coordState struct {
	heldGroups   int
	localActive  int
	localWaiting int
	pending      []string // instances waiting for handoffs, with who they wait for
	members      []cluster.Member
}

func newCoordinator(n *Node, selfID string, topo topology.Topology, held map[string][]bool) *coordinator {
	if held == nil {
		held = make(map[string][]bool)
	}
	startup := make(map[string][]bool)
	if n.cfg.Checkpoints != nil {
		for op, g := range held {
			startup[op] = slices.Clone(g)
		}
	}
	return &coordinator{
		n:         n,
		selfID:    selfID,
		leaving:   make(map[string]bool),
		haveSeen:  make(map[string]bool),
		topo:      topo,
		local:     make(map[instKey]*localInst),
		acq:       make(map[uint64]*acquisition),
		current:   make(map[instKey]*acquisition),
		held:      held,
		startup:   startup,
		shipping:  make(map[string][]bool),
		purged:    make(map[string]bool),
		exporting: make(map[string]bool),
		ready:     make(chan struct{}),
		gen:       n.gen.Load(),
	}
}

// Receive handles the coordinator's messages.
func (c *coordinator) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.ticker.stop() // a restarted actor's previous one
		c.ticker = c.n.tickSelf(ctx.Self(), 250*time.Millisecond, tickMsg{})
	case *actor.Stopping:
		c.ticker.stop()
	case membershipMsg:
		c.pending = m.members
		if !c.applyQueued {
			c.applyQueued = true
			if d := c.n.cfg.settle(); d > 0 && c.haveView {
				pid, root := ctx.Self(), c.n.system.Root
				c.n.afterFunc(d, func() { root.Send(pid, applyMsg{}) })
			} else {
				ctx.Send(ctx.Self(), applyMsg{})
			}
		}
	case applyMsg:
		if !c.haveView {
			c.purge() // a purge the node stopped before carrying out
		}
		c.applyQueued = false
		old := c.members
		c.members = c.pending
		if c.haveView {
			c.reportChanges(old, c.members)
		}
		c.haveView = true
		for _, m := range c.members {
			c.haveSeen[m.ID] = true
		}
		for id := range c.leaving {
			if id != c.selfID && !c.isMember(id) {
				delete(c.leaving, id)
			}
		}
		if c.leaving[c.selfID] {
			c.announceLeaving() // to members that joined since
		}
		c.apply()
	case topologyMsg:
		if m.topo.Version < c.topo.Version {
			return // an older version, delivered late
		}
		c.n.topologyEvents(c.topo, m.topo)
		c.topo = m.topo
		c.purge()
		c.apply()
	case instanceReleased:
		if li := c.local[m.key]; li != nil && li.state == lsReleasing {
			li.state = lsReleased
			li.releasedAt = time.Now()
			if c.current[m.key] != nil {
				li.state = lsAwaiting // placed here again while releasing
			}
		}
		c.purge()
		c.serveWaiting()
		c.checkAll()
	case *wire.HandoffRequest:
		if c.n.vouched(ctx, "HandoffRequest", m.Requester) {
			c.serve(m)
		}
	case *wire.HandoffReply:
		if c.n.vouched(ctx, "HandoffReply", m.Node) {
			c.onReply(m)
		}
	case *wire.HandoffChunk:
		if p := peerOf(ctx); c.n.transport != nil && p != "" && !c.askedOf(p, m) {
			ctx.Respond(&wire.HandoffAck{Error: fmt.Sprintf("node %s was not asked for these key groups", p)})
			return
		}
		ctx.Respond(c.onChunk(m))
	case exportDone:
		c.onExportDone(m)
	case rolledBackMsg:
		c.onRolledBack(m)
	case *wire.Leaving:
		if !c.n.vouched(ctx, "Leaving", m.Node) {
			return
		}
		if !c.leaving[m.Node] {
			c.leaving[m.Node] = true
			c.n.log.Info("node is leaving; taking over its instances", "leaving", m.Node)
			c.apply()
		}
	case leaveMsg:
		c.leaving[c.selfID] = true
		c.announceLeaving()
		c.apply()
	case tickMsg:
		c.tick()
	case coordStateMsg:
		m.reply <- c.snapshot()
	}
}

// reportChanges emits membership events for the difference of two views.
//
// A member whose incarnation changed (a node restarted under the same id
// before the others saw it gone: a fast supervisor) left and joined again:
// its old process crashed, with what was in flight to it, and the
// acquisitions that asked the old process ask the new one.
func (c *coordinator) reportChanges(old, cur []cluster.Member) {
	was := make(map[string]bool)
	inc := make(map[string]string)
	addr := make(map[string]string)
	for _, m := range old {
		was[m.ID] = true
		inc[m.ID] = m.Meta[metaIncarnation]
		addr[m.ID] = m.Address
	}
	for _, m := range cur {
		if was[m.ID] && inc[m.ID] != "" && m.Meta[metaIncarnation] != "" && inc[m.ID] != m.Meta[metaIncarnation] {
			c.n.log.Warn("a node restarted before it was seen gone", "node", m.ID, "address", m.Address)
			c.n.memberEvent(EventMemberLeft, m.ID)
			delete(c.leaving, m.ID)
			c.memberCrashed(m.ID, addr[m.ID])
			for _, a := range c.acq {
				if _, asked := a.addrs[m.ID]; asked {
					a.addrs[m.ID] = m.Address
					if _, waits := a.waiting[m.ID]; waits {
						c.ask(a, m.ID)
					}
				}
			}
			was[m.ID] = false
		}
		if !was[m.ID] {
			c.n.memberEvent(EventMemberJoined, m.ID)
		}
		delete(was, m.ID)
	}
	for id := range was {
		c.n.memberEvent(EventMemberLeft, id)
		if !c.leaving[id] {
			c.memberCrashed(id, addr[id])
		}
	}
}

// memberCrashed records that member id, whose process had actor address
// addr, left without announcing it: the checkpointer hears of it
// (exactly-once rolls back), producers here learn that what they gave up
// on in flight to addr is lost (Node.lostInFlight), and under
// at-least-once what was in flight to it, and its instances' uncommitted
// work, is lost, so sources replay.
func (c *coordinator) memberCrashed(id, addr string) {
	c.n.record(Event{What: EventNodeLost, Peer: id})
	c.crashed = append(c.crashed, id)
	c.n.noteCrashed(addr)
	if c.n.cfg.AtLeastOnce {
		c.n.log.Warn("a node crashed; rewinding replayable sources", "node", id)
		for _, li := range c.local {
			c.n.system.Root.Send(li.inst.pid, rewindMsg{})
		}
	}
}

// isMember reports whether id is in the current view.
func (c *coordinator) isMember(id string) bool {
	for _, m := range c.members {
		if m.ID == id {
			return true
		}
	}
	return false
}

// coordPID returns the coordinator of member m.
func coordPID(m cluster.Member) *actor.PID { return actor.NewPID(m.Address, coordinatorName) }

// announceLeaving tells every other member that this node is leaving.
func (c *coordinator) announceLeaving() {
	for _, m := range c.members {
		if m.ID != c.selfID {
			c.n.system.Root.Send(coordPID(m), &wire.Leaving{Node: c.selfID})
		}
	}
}

// placementNodes returns the members instances may be placed on.
func (c *coordinator) placementNodes() []placement.Node {
	var nodes []placement.Node
	for _, m := range c.members {
		if !c.leaving[m.ID] {
			nodes = append(nodes, placement.Node{ID: m.ID, Kinds: m.Kinds})
		}
	}
	return nodes
}

// apply computes the placement and makes this node follow it.
func (c *coordinator) apply() {
	nodes := c.placementNodes()
	owners := make(map[instKey]string)
	for _, spec := range c.topo.Operators {
		for idx := 0; idx < spec.Meta.Parallelism; idx++ {
			k := instKey{op: spec.Meta.Name, epoch: spec.Epoch, index: idx}
			if id, ok := placement.Owner(placement.Instance{Operator: k.op, Kind: spec.Kind, Index: idx}, nodes); ok {
				owners[k] = id
			}
		}
	}
	// Release what no longer runs here.
	for k, li := range c.local {
		if owners[k] == c.selfID {
			continue
		}
		switch li.state {
		case lsAwaiting, lsActive:
			c.abandon(k)
			c.n.log.Debug("releasing", "instance", k.String(), "owner", owners[k])
			li.state = lsReleasing
			c.n.system.Root.Send(li.inst.pid, releaseMsg{})
		}
	}
	// Acquire what now runs here.
	for _, spec := range c.topo.Operators {
		for idx := 0; idx < spec.Meta.Parallelism; idx++ {
			k := instKey{op: spec.Meta.Name, epoch: spec.Epoch, index: idx}
			if owners[k] != c.selfID {
				continue
			}
			li := c.local[k]
			if li != nil && li.revision != spec.Revision {
				li.revision = spec.Revision
				c.n.system.Root.Send(li.inst.pid, specMsg{spec: spec})
			}
			switch {
			case li == nil:
				op, err := c.n.operator(spec)
				if err != nil {
					c.n.log.Error("cannot host instance", "instance", k.String(), "error", err)
					continue
				}
				inst, err := op.spawn(c.n.life, spec, idx)
				if err != nil {
					c.n.log.Error("cannot spawn instance", "instance", k.String(), "error", err)
					continue
				}
				li = &localInst{inst: inst, state: lsAwaiting, revision: spec.Revision}
				c.local[k] = li
			case li.state == lsReleasing || li.state == lsReleased:
				c.n.system.Root.Send(li.inst.pid, acquireMsg{})
				if li.state == lsReleased {
					li.state = lsAwaiting
				}
				// A releasing instance finishes releasing first; its own
				// handoff request waits for that (see serve).
			default:
				continue // awaiting or active already
			}
			c.startAcquisition(k, li)
		}
	}
	// Members that left answer no more: count them as done. (A member
	// learnt from a reply and not yet in our view is kept: it is alive.)
	for _, a := range c.acq {
		for id := range a.waiting {
			if !c.isMember(id) && id != c.selfID && c.haveSeen[id] {
				delete(a.waiting, id)
			}
		}
	}
	c.finishAbandoned()
	c.publish(owners)
	c.serveWaiting()
	c.checkAll()
	select {
	case <-c.ready:
	default:
		close(c.ready)
	}
}

// tick re-asks members that said NOT_YET or did not answer, and forgets
// instances released long ago.
func (c *coordinator) tick() {
	now := time.Now()
	c.finishAbandoned()
	c.serveWaiting()
	for _, a := range c.current {
		for id, asked := range a.waiting {
			if a.notYet[id] || now.Sub(asked) > 5*time.Second {
				c.ask(a, id)
			}
		}
	}
	for k, li := range c.local {
		if li.state == lsReleased && now.Sub(li.releasedAt) > releasedLinger {
			delete(c.local, k)
			li.inst.op.remove(li.inst)
			c.n.forgetTail(li.inst.op)
		}
	}
}

// releasedLinger is how long a released instance stays to bounce records
// from producers whose route table is stale.
var releasedLinger = time.Minute // a variable for tests

// publish builds and publishes the route table for owners.
func (c *coordinator) publish(owners map[instKey]string) {
	addr := make(map[string]string)
	inc := make(map[string]string)
	live := make(map[string]bool)
	for _, m := range c.members {
		addr[m.ID] = m.Address
		inc[m.ID] = m.Meta[metaIncarnation]
		live[m.Address] = true
	}
	t := &flow.Table{Streams: make(map[string][]*flow.Subscription), Live: live, Local: c.n.addr, Version: 1}
	if old := c.n.table.Load(); old != nil {
		t.Version = old.Version + 1
	}
	for _, spec := range c.topo.Operators {
		m := spec.Meta
		dests := make([]flow.Dest, m.Parallelism) // shared by the operator's subscriptions
		for idx := range dests {
			k := instKey{op: m.Name, epoch: spec.Epoch, index: idx}
			if id, ok := owners[k]; ok && addr[id] != "" {
				dests[idx] = c.n.newDest(addr[id], inc[id], k.pidID())
			}
		}
		for _, in := range m.Inputs {
			s := &flow.Subscription{Stream: in.Stream, Operator: m.Name, Epoch: spec.Epoch, Routing: in.Routing, KeyGroups: m.KeyGroups, Dests: dests}
			t.Streams[in.Stream] = append(t.Streams[in.Stream], s)
		}
	}
	c.n.table.Store(t)
	topo := c.topo
	c.n.topo.Store(&topo)
	if c.n.ckpt != nil {
		c.n.system.Root.Send(c.n.ckpt, ckpt.View{Members: slices.Clone(c.members), Topo: topo, Crashed: c.crashed})
		c.crashed = nil
	}
	// Instances adopt the table now rather than at their next record, so
	// that batches to moved instances are re-routed even when idle.
	for _, li := range c.local {
		c.n.system.Root.Send(li.inst.pid, routesMsg{})
	}
	c.n.ingress.refresh()
}

// hostedElsewhere reports whether a member other than this node, and not
// leaving, can host op's kind.
func (c *coordinator) hostedElsewhere(op string) bool {
	spec, ok := c.topo.Find(op)
	if !ok {
		return false
	}
	for _, m := range c.members {
		if m.ID != c.selfID && !c.leaving[m.ID] && slices.Contains(m.Kinds, spec.Kind) {
			return true
		}
	}
	return false
}

// snapshot describes the coordinator's state. heldGroups counts only the
// key groups another node could take over.
func (c *coordinator) snapshot() coordState {
	var s coordState
	for op, h := range c.held {
		if !c.hostedElsewhere(op) {
			continue // nobody else could take these groups: they stay here
		}
		for _, b := range h {
			if b {
				s.heldGroups++
			}
		}
	}
	for _, li := range c.local {
		switch li.state {
		case lsActive:
			s.localActive++
		case lsAwaiting:
			s.localWaiting++
		}
	}
	for k, a := range c.current {
		var who []string
		for id := range a.waiting {
			who = append(who, id)
		}
		slices.Sort(who)
		s.pending = append(s.pending, fmt.Sprintf("%s awaiting state from %v", k, who))
	}
	slices.Sort(s.pending)
	s.members = slices.Clone(c.members)
	return s
}

// purge deletes the state of operators killed with purge, once none of
// their instances is still active here.
func (c *coordinator) purge() {
	for _, op := range c.topo.Purged {
		if _, deployed := c.topo.Find(op); deployed || c.purged[op] {
			continue
		}
		busy := false
		for k, li := range c.local {
			if k.op == op && (li.state == lsActive || li.state == lsAwaiting) {
				busy = true // released by the apply that follows; purged next time
			}
		}
		if busy {
			continue
		}
		if err := c.n.db.PurgeOperator(op); err != nil {
			c.n.log.Error("purging a killed operator's state failed", "operator", op, "error", err)
			continue
		}
		delete(c.held, op)
		c.purged[op] = true
		c.n.log.Info("purged a killed operator's state", "operator", op)
	}
	for op := range c.purged {
		if !slices.Contains(c.topo.Purged, op) {
			delete(c.purged, op) // redeployed: purge again if killed again
		}
	}
}

// metaIncarnation is the member metadata key of a node process's
// incarnation: random, new every time the node starts, so that the others
// can tell a restart under the same id from the same process.
const metaIncarnation = "incarnation"

// newIncarnation returns a fresh incarnation.
func newIncarnation() string { return rand.Text() }
