package handoff

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/ckpt"
	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/placement"
	"github.com/sluicehq/sluice/topology"
)

// coordinatorName is the actor id of every node's coordinator.
const coordinatorName = "sluice-coordinator"

// Coordinator is the actor that decides, on each node, which operator
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
// with it (a rollback keeps that: see onRolledBack). A member that leaves
// the membership (crash) counts as DONE: what it held is lost, and the
// instance starts from what this node has.
type Coordinator struct {
	n              Node
	root           *actor.RootContext
	db             *persistence.DB
	log            *slog.Logger
	selfID         string
	addr           string     // this node's actor address
	ckpt           *actor.PID // the node's checkpointer
	settle         time.Duration
	exactlyOnce    bool
	atLeastOnce    bool
	stateLog       bool
	incarnationKey string
	releasedLinger time.Duration

	members     []cluster.Member // latest applied view
	pending     []cluster.Member // received, waiting for the settle delay
	haveView    bool
	applyQueued bool
	leaving     map[string]bool // node ids that announced they are leaving
	haveSeen    map[string]bool // node ids ever in an applied view
	topo        topology.Topology

	local     map[ckpt.Key]*localInst
	acq       map[uint64]*acquisition   // by id, including abandoned ones
	current   map[ckpt.Key]*acquisition // the live acquisition of each awaiting instance
	held      map[string][]bool         // op → key groups whose data this node holds
	startup   map[string][]bool         // op → key groups held at start, not yet restored (exactly-once)
	crashed   []string                  // members that left without announcing it, not yet told to the checkpointer
	shipping  map[string][]bool         // op → key groups being exported now
	purged    map[string]bool           // killed operators whose state was purged here
	waiting   []*wire.HandoffRequest
	exporting map[string]bool // requester|op|first|end of exports in progress

	nextAcq uint64 // id of the last acquisition started
	// gen is the rollback generation whose stale state this node has
	// dropped (onRolledBack): while the node's generation is newer, a
	// rollback is under way here and what it holds may be from after the
	// checkpoint, so it neither ships nor takes state, nor activates.
	gen uint64

	ready    chan struct{} // closed after the first placement
	stopTick func()        // stops the ticker that sends tickMsg (Node.Tick)
}

// localInst is the coordinator's record of an instance on this node.
type localInst struct {
	inst       Instance
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

// Coordinator messages from itself.
type (
	applyMsg   struct{}
	exportDone struct {
		req  *wire.HandoffRequest
		runs [][2]int
		err  error
		key  string
	}
	tickMsg struct{}
)

// New returns the coordinator of a node, to spawn (Spawn): it starts with
// topology p.Topo and holding the key groups p.Held (op → flags; nil:
// none).
func New(p Params, n Node) *Coordinator {
	held := p.Held
	if held == nil {
		held = make(map[string][]bool)
	}
	startup := make(map[string][]bool)
	if p.ExactlyOnce {
		for op, g := range held {
			startup[op] = slices.Clone(g)
		}
	}
	return &Coordinator{
		n:              n,
		root:           p.Root,
		db:             p.DB,
		log:            p.Log,
		selfID:         p.NodeID,
		addr:           p.Addr,
		ckpt:           p.Checkpointer,
		settle:         p.Settle,
		exactlyOnce:    p.ExactlyOnce,
		atLeastOnce:    p.AtLeastOnce,
		stateLog:       p.StateLog,
		incarnationKey: p.IncarnationKey,
		releasedLinger: p.ReleasedLinger,
		leaving:        make(map[string]bool),
		haveSeen:       make(map[string]bool),
		topo:           p.Topo,
		local:          make(map[ckpt.Key]*localInst),
		acq:            make(map[uint64]*acquisition),
		current:        make(map[ckpt.Key]*acquisition),
		held:           held,
		startup:        startup,
		shipping:       make(map[string][]bool),
		purged:         make(map[string]bool),
		exporting:      make(map[string]bool),
		ready:          make(chan struct{}),
		gen:            p.Gen,
		stopTick:       func() {}, // until Started
	}
}

// Spawn spawns c as the node's coordinator (every node's has the same
// name, by which the others address it).
func Spawn(root *actor.RootContext, c *Coordinator) (*actor.PID, error) {
	return root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return c }), coordinatorName)
}

// Ready is closed once the coordinator placed instances the first time.
func (c *Coordinator) Ready() <-chan struct{} { return c.ready }

// Held returns the key groups this node holds, by operator: read it only
// once the coordinator stopped.
func (c *Coordinator) Held() map[string][]bool { return c.held }

// Receive handles the coordinator's messages.
func (c *Coordinator) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.stopTick() // a restarted actor's previous one
		c.stopTick = c.n.Tick(ctx.Self(), 250*time.Millisecond, tickMsg{})
	case *actor.Stopping:
		c.stopTick()
	case Membership:
		c.pending = m.Members
		if !c.applyQueued {
			c.applyQueued = true
			if d := c.settle; d > 0 && c.haveView {
				pid, root := ctx.Self(), c.root
				c.n.AfterFunc(d, func() { root.Send(pid, applyMsg{}) })
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
	case TopologyChanged:
		if m.Topo.Version < c.topo.Version {
			return // an older version, delivered late
		}
		c.n.TopologyEvents(c.topo, m.Topo)
		c.topo = m.Topo
		c.purge()
		c.apply()
	case Released:
		if li := c.local[m.Key]; li != nil && li.state == lsReleasing {
			li.state = lsReleased
			li.releasedAt = time.Now()
			if c.current[m.Key] != nil {
				li.state = lsAwaiting // placed here again while releasing
			}
		}
		c.purge()
		c.serveWaiting()
		c.checkAll()
	case *wire.HandoffRequest:
		if c.n.Vouched(ctx, "HandoffRequest", m.Requester) {
			c.serve(m)
		}
	case *wire.HandoffReply:
		if c.n.Vouched(ctx, "HandoffReply", m.Node) {
			c.onReply(m)
		}
	case *wire.HandoffChunk:
		if p := c.n.Peer(ctx); p != "" && !c.askedOf(p, m) {
			ctx.Respond(&wire.HandoffAck{Error: fmt.Sprintf("node %s was not asked for these key groups", p)})
			return
		}
		ctx.Respond(c.onChunk(m))
	case exportDone:
		c.onExportDone(m)
	case RolledBack:
		c.onRolledBack(m)
	case *wire.Leaving:
		if !c.n.Vouched(ctx, "Leaving", m.Node) {
			return
		}
		if !c.leaving[m.Node] {
			c.leaving[m.Node] = true
			c.log.Info("node is leaving; taking over its instances", "leaving", m.Node)
			c.apply()
		}
	case Leave:
		c.leaving[c.selfID] = true
		c.announceLeaving()
		c.apply()
	case tickMsg:
		c.tick()
	case StateRequest:
		m.Reply <- c.snapshot()
	}
}

// reportChanges emits membership events for the difference of two views.
//
// A member whose incarnation changed (a node restarted under the same id
// before the others saw it gone: a fast supervisor) left and joined again:
// its old process crashed, with what was in flight to it, and the
// acquisitions that asked the old process ask the new one.
func (c *Coordinator) reportChanges(old, cur []cluster.Member) {
	was := make(map[string]bool)
	inc := make(map[string]string)
	addr := make(map[string]string)
	for _, m := range old {
		was[m.ID] = true
		inc[m.ID] = m.Meta[c.incarnationKey]
		addr[m.ID] = m.Address
	}
	for _, m := range cur {
		if was[m.ID] && inc[m.ID] != "" && m.Meta[c.incarnationKey] != "" && inc[m.ID] != m.Meta[c.incarnationKey] {
			c.log.Warn("a node restarted before it was seen gone", "node", m.ID, "address", m.Address)
			c.n.MemberLeft(m.ID)
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
			c.n.MemberJoined(m.ID)
		}
		delete(was, m.ID)
	}
	for id := range was {
		c.n.MemberLeft(id)
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
func (c *Coordinator) memberCrashed(id, addr string) {
	c.n.NodeLost(id)
	c.crashed = append(c.crashed, id)
	c.n.NoteCrashed(addr)
	if c.atLeastOnce {
		c.log.Warn("a node crashed; rewinding replayable sources", "node", id)
		for _, li := range c.local {
			c.n.Rewind(li.inst)
		}
	}
}

// isMember reports whether id is in the current view.
func (c *Coordinator) isMember(id string) bool {
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
func (c *Coordinator) announceLeaving() {
	for _, m := range c.members {
		if m.ID != c.selfID {
			c.root.Send(coordPID(m), &wire.Leaving{Node: c.selfID})
		}
	}
}

// placementNodes returns the members instances may be placed on.
func (c *Coordinator) placementNodes() []placement.Node {
	var nodes []placement.Node
	for _, m := range c.members {
		if !c.leaving[m.ID] {
			nodes = append(nodes, placement.Node{ID: m.ID, Kinds: m.Kinds})
		}
	}
	return nodes
}

// apply computes the placement and makes this node follow it.
func (c *Coordinator) apply() {
	nodes := c.placementNodes()
	owners := make(map[ckpt.Key]string)
	for _, spec := range c.topo.Operators {
		for idx := 0; idx < spec.Meta.Parallelism; idx++ {
			k := ckpt.Key{Op: spec.Meta.Name, Epoch: spec.Epoch, Index: idx}
			if id, ok := placement.Owner(placement.Instance{Operator: k.Op, Kind: spec.Kind, Index: idx}, nodes); ok {
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
			c.log.Debug("releasing", "instance", k.String(), "owner", owners[k])
			li.state = lsReleasing
			c.n.Release(li.inst)
		}
	}
	// Acquire what now runs here.
	for _, spec := range c.topo.Operators {
		for idx := 0; idx < spec.Meta.Parallelism; idx++ {
			k := ckpt.Key{Op: spec.Meta.Name, Epoch: spec.Epoch, Index: idx}
			if owners[k] != c.selfID {
				continue
			}
			li := c.local[k]
			if li != nil && li.revision != spec.Revision {
				li.revision = spec.Revision
				c.n.SetSpec(li.inst, spec)
			}
			switch {
			case li == nil:
				inst, err := c.n.Spawn(spec, idx)
				if err != nil {
					c.log.Error("cannot spawn instance", "instance", k.String(), "error", err)
					continue
				}
				li = &localInst{inst: inst, state: lsAwaiting, revision: spec.Revision}
				c.local[k] = li
			case li.state == lsReleasing || li.state == lsReleased:
				c.n.Acquire(li.inst)
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
func (c *Coordinator) tick() {
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
		if li.state == lsReleased && now.Sub(li.releasedAt) > c.releasedLinger {
			delete(c.local, k)
			c.n.Remove(li.inst)
		}
	}
}

// publish publishes the route table for owners (the node builds it) and
// tells the checkpointer and the instances.
func (c *Coordinator) publish(owners map[ckpt.Key]string) {
	topo := c.topo
	c.n.Publish(owners, c.members, topo)
	if c.ckpt != nil {
		c.root.Send(c.ckpt, ckpt.View{Members: slices.Clone(c.members), Topo: topo, Crashed: c.crashed})
		c.crashed = nil
	}
	// Instances adopt the table now rather than at their next record, so
	// that batches to moved instances are re-routed even when idle.
	locals := make([]Instance, 0, len(c.local))
	for _, li := range c.local {
		locals = append(locals, li.inst)
	}
	c.n.Routed(locals)
}

// hostedElsewhere reports whether a member other than this node, and not
// leaving, can host op's kind.
func (c *Coordinator) hostedElsewhere(op string) bool {
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
func (c *Coordinator) snapshot() State {
	var s State
	for op, h := range c.held {
		if !c.hostedElsewhere(op) {
			continue // nobody else could take these groups: they stay here
		}
		for _, b := range h {
			if b {
				s.HeldGroups++
			}
		}
	}
	for _, li := range c.local {
		switch li.state {
		case lsActive:
			s.LocalActive++
		case lsAwaiting:
			s.LocalWaiting++
		}
	}
	for k, a := range c.current {
		var who []string
		for id := range a.waiting {
			who = append(who, id)
		}
		slices.Sort(who)
		s.Pending = append(s.Pending, fmt.Sprintf("%s awaiting state from %v", k, who))
	}
	slices.Sort(s.Pending)
	s.Members = slices.Clone(c.members)
	for _, m := range c.members {
		if c.leaving[m.ID] {
			s.Leaving = append(s.Leaving, m.ID)
		}
	}
	return s
}

// purge deletes the state of operators killed with purge, once none of
// their instances is still active here.
func (c *Coordinator) purge() {
	for _, op := range c.topo.Purged {
		if _, deployed := c.topo.Find(op); deployed || c.purged[op] {
			continue
		}
		busy := false
		for k, li := range c.local {
			if k.Op == op && (li.state == lsActive || li.state == lsAwaiting) {
				busy = true // released by the apply that follows; purged next time
			}
		}
		if busy {
			continue
		}
		if err := c.db.PurgeOperator(op); err != nil {
			c.log.Error("purging a killed operator's state failed", "operator", op, "error", err)
			continue
		}
		delete(c.held, op)
		c.purged[op] = true
		c.log.Info("purged a killed operator's state", "operator", op)
	}
	for op := range c.purged {
		if !slices.Contains(c.topo.Purged, op) {
			delete(c.purged, op) // redeployed: purge again if killed again
		}
	}
}
