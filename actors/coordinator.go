package actors

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/persistence"
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
// with it. A member that leaves the membership (crash) counts as DONE: what
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
	shipping  map[string][]bool        // op → key groups being exported now
	purged    map[string]bool          // killed operators whose state was purged here
	waiting   []*wire.HandoffRequest
	exporting map[string]bool // requester|op|first|end of exports in progress

	nextAcq uint64 // id of the last acquisition started

	ready  chan struct{} // closed after the first placement
	ticker *time.Ticker
	tickCh chan struct{}
}

// localInst is the coordinator's record of an instance on this node.
type localInst struct {
	inst       *instance
	state      localState
	releasedAt time.Time
}

type localState uint8

const (
	lsAwaiting localState = iota
	lsActive
	lsReleasing
	lsReleased
)

// acquisition tracks the HandoffRequests of an awaiting instance.
//
// An acquisition abandoned because the instance was placed elsewhere before
// it became active is kept until every member it asked has answered: state
// may still be on its way here, and requests from other nodes for those key
// groups wait until it has landed, so that it is passed on rather than lost.
type acquisition struct {
	id        uint64
	li        *localInst
	waiting   map[string]time.Time // member id → when last asked
	answered  map[string]bool      // members that answered DONE
	addrs     map[string]string    // actor address of every member asked
	notYet    map[string]bool
	abandoned time.Time // when it was abandoned; zero while live
	shipped   int       // key groups other members shipped
	heldHere  bool      // this node held some of the key groups already
}

// abandonedTimeout bounds how long an abandoned acquisition waits for
// answers (in case one was lost).
const abandonedTimeout = 30 * time.Second

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
		shipping:  make(map[string][]bool),
		purged:    make(map[string]bool),
		exporting: make(map[string]bool),
		ready:     make(chan struct{}),
	}
}

// Receive handles the coordinator's messages.
func (c *coordinator) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.ticker = time.NewTicker(250 * time.Millisecond)
		c.tickCh = make(chan struct{})
		pid, root, t, stop := ctx.Self(), c.n.system.Root, c.ticker, c.tickCh
		c.n.goFunc(func() {
			for {
				select {
				case <-t.C:
					root.Send(pid, tickMsg{})
				case <-stop:
					return
				}
			}
		})
	case *actor.Stopping:
		c.ticker.Stop()
		close(c.tickCh)
	case membershipMsg:
		c.pending = m.members
		if !c.applyQueued {
			c.applyQueued = true
			if d := c.n.cfg.settle(); d > 0 && c.haveView {
				pid, root := ctx.Self(), c.n.system.Root
				time.AfterFunc(d, func() { root.Send(pid, applyMsg{}) })
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
		c.serve(m)
	case *wire.HandoffReply:
		c.onReply(m)
	case *wire.HandoffChunk:
		ctx.Respond(c.onChunk(m))
	case exportDone:
		c.onExportDone(m)
	case *wire.Leaving:
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
func (c *coordinator) reportChanges(old, cur []cluster.Member) {
	was := make(map[string]bool)
	for _, m := range old {
		was[m.ID] = true
	}
	for _, m := range cur {
		if !was[m.ID] {
			c.n.memberEvent("member-joined", m.ID)
		}
		delete(was, m.ID)
	}
	for id := range was {
		c.n.memberEvent("member-left", id)
		if !c.leaving[id] && c.n.cfg.AtLeastOnce {
			// A crash: what was in flight to it, and its instances'
			// uncommitted work, is lost; sources replay.
			c.n.log.Warn("a node crashed; rewinding replayable sources", "node", id)
			for _, li := range c.local {
				c.n.system.Root.Send(li.inst.pid, rewindMsg{})
			}
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
			switch {
			case li == nil:
				op, err := c.n.operator(spec.Meta.Name, spec.Kind)
				if err != nil {
					c.n.log.Error("cannot host instance", "instance", k.String(), "error", err)
					continue
				}
				inst, err := op.spawn(context.Background(), spec, idx)
				if err != nil {
					c.n.log.Error("cannot spawn instance", "instance", k.String(), "error", err)
					continue
				}
				li = &localInst{inst: inst, state: lsAwaiting}
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

// startAcquisition asks every member (this node included) for the state of
// k's key groups.
func (c *coordinator) startAcquisition(k instKey, li *localInst) {
	c.abandon(k)
	heldHere := false
	for g := li.inst.lo; g < li.inst.hi; g++ {
		if h := c.held[k.op]; h != nil && h[g] {
			heldHere = true
		}
	}
	c.nextAcq++
	a := &acquisition{id: c.nextAcq, li: li, waiting: make(map[string]time.Time), notYet: make(map[string]bool),
		answered: make(map[string]bool), addrs: make(map[string]string), heldHere: heldHere}
	c.acq[a.id] = a
	c.current[k] = a
	c.n.log.Debug("acquiring", "instance", k.String(), "acq", a.id, "members", len(c.members))
	a.addrs[c.selfID] = c.n.addr
	for _, m := range c.members {
		a.addrs[m.ID] = m.Address
	}
	for id := range a.addrs {
		c.ask(a, id)
	}
}

// abandon marks k's live acquisition, if any, as abandoned.
func (c *coordinator) abandon(k instKey) {
	if a := c.current[k]; a != nil {
		delete(c.current, k)
		a.abandoned = time.Now()
		// Members that said NOT_YET have shipped nothing and, not being
		// asked again, will not: only the others may still send state.
		for id := range a.notYet {
			delete(a.waiting, id)
		}
	}
}

// finishAbandoned forgets abandoned acquisitions that every member has
// answered (or that waited too long).
func (c *coordinator) finishAbandoned() {
	for id, a := range c.acq {
		if !a.abandoned.IsZero() && (len(a.waiting) == 0 || time.Since(a.abandoned) > abandonedTimeout) {
			delete(c.acq, id)
		}
	}
}

// ask sends a's HandoffRequest to member id.
func (c *coordinator) ask(a *acquisition, id string) {
	inst := a.li.inst
	req := &wire.HandoffRequest{
		Operator: inst.key.op, Epoch: inst.key.epoch, Index: int32(inst.key.index),
		FirstGroup: int32(inst.lo), EndGroup: int32(inst.hi),
		Requester: c.selfID, ReplyTo: actor.NewPID(c.n.addr, coordinatorName), Acquisition: a.id,
	}
	a.waiting[id] = time.Now()
	delete(a.notYet, id)
	c.n.system.Root.Send(actor.NewPID(a.addrs[id], coordinatorName), req)
}

// ownerOf returns the node that owns instance k in this node's view, or ""
// (also when k is not in the current topology).
func (c *coordinator) ownerOf(k instKey) string {
	spec, ok := c.topo.Find(k.op)
	if !ok || spec.Epoch != k.epoch || k.index >= spec.Meta.Parallelism {
		return ""
	}
	id, _ := placement.Owner(placement.Instance{Operator: k.op, Kind: spec.Kind, Index: k.index}, c.placementNodes())
	return id
}

// serve answers a HandoffRequest, now or once local releases finish.
func (c *coordinator) serve(req *wire.HandoffRequest) {
	first, end := int(req.FirstGroup), int(req.EndGroup)
	reqKey := instKey{op: req.Operator, epoch: req.Epoch, index: int(req.Index)}
	// Answer only a requester that owns the instance in this node's view
	// too: state goes only where both agree it belongs, and a requester
	// whose view is behind (or ahead) waits until the views agree.
	if owner := c.ownerOf(reqKey); owner != req.Requester {
		c.n.log.Debug("not yet: views differ", "instance", reqKey.String(), "requester", req.Requester, "owner here", owner)
		c.reply(req, wire.HandoffReply_NOT_YET, 0)
		return
	}
	wait := false
	for k, li := range c.local {
		if k.op != req.Operator || !overlaps(li.inst.lo, li.inst.hi, first, end) {
			continue
		}
		self := req.Requester == c.selfID && k == reqKey
		switch li.state {
		case lsAwaiting, lsActive:
			if !self {
				c.n.log.Debug("not yet", "operator", req.Operator, "first", first, "end", end, "requester", req.Requester, "busy", k.String())
				c.reply(req, wire.HandoffReply_NOT_YET, 0)
				return
			}
		case lsReleasing:
			wait = true
		}
	}
	if sh := c.shipping[req.Operator]; sh != nil && slices.Contains(sh[first:end], true) {
		wait = true
	}
	for _, a := range c.acq {
		inst := a.li.inst
		if !a.abandoned.IsZero() && inst.key.op == req.Operator && overlaps(inst.lo, inst.hi, first, end) {
			wait = true // state may still be arriving for these groups
		}
	}
	if wait {
		c.n.log.Debug("request waits", "operator", req.Operator, "first", first, "end", end, "requester", req.Requester, "acq", req.Acquisition)
		c.waiting = append(c.waiting, req)
		return
	}
	runs := c.heldRuns(req.Operator, first, end)
	c.n.log.Debug("serving", "operator", req.Operator, "first", first, "end", end, "requester", req.Requester, "acq", req.Acquisition, "runs", fmt.Sprint(runs))
	if req.Requester == c.selfID || len(runs) == 0 {
		// The data is already here (or nowhere): nothing to move.
		c.reply(req, wire.HandoffReply_DONE, 0)
		return
	}
	key := fmt.Sprintf("%s|%s|%d|%d", req.Requester, req.Operator, first, end)
	if c.exporting[key] {
		return // a retried request while the export runs
	}
	c.exporting[key] = true
	sh := c.groups(c.shipping, req.Operator)
	for _, r := range runs {
		for g := r[0]; g < r[1]; g++ {
			sh[g] = true
		}
	}
	n := c.n
	n.goFunc(func() {
		err := n.export(req, runs)
		n.system.Root.Send(actor.NewPID(n.addr, coordinatorName), exportDone{req: req, runs: runs, err: err, key: key})
	})
}

// onExportDone finishes serving a request whose key groups were shipped.
func (c *coordinator) onExportDone(m exportDone) {
	delete(c.exporting, m.key)
	sh, held := c.groups(c.shipping, m.req.Operator), c.groups(c.held, m.req.Operator)
	shipped := 0
	for _, r := range m.runs {
		for g := r[0]; g < r[1]; g++ {
			sh[g] = false
			if m.err == nil {
				held[g] = false
				shipped++
			}
		}
	}
	if m.err != nil {
		c.n.log.Warn("state handoff failed; will retry when asked again", "operator", m.req.Operator, "to", m.req.Requester, "error", m.err)
	} else {
		c.n.log.Info("state handed off", "operator", m.req.Operator, "to", m.req.Requester, "groups", shipped)
		c.reply(m.req, wire.HandoffReply_DONE, shipped)
	}
	c.serveWaiting()
}

// serveWaiting retries requests that waited for releases or exports.
func (c *coordinator) serveWaiting() {
	reqs := c.waiting
	c.waiting = nil
	for _, r := range reqs {
		c.serve(r)
	}
}

// reply answers req.
func (c *coordinator) reply(req *wire.HandoffRequest, status wire.HandoffReply_Status, shipped int) {
	r := &wire.HandoffReply{
		Operator: req.Operator, Epoch: req.Epoch, Index: req.Index,
		Node: c.selfID, Status: status, GroupsShipped: int32(shipped), Acquisition: req.Acquisition,
	}
	if status == wire.HandoffReply_DONE {
		for _, m := range c.members {
			r.Members = append(r.Members, &wire.Peer{Id: m.ID, Address: m.Address})
		}
	}
	c.n.system.Root.Send(req.ReplyTo, r)
}

// onReply records a member's answer to one of our requests.
func (c *coordinator) onReply(m *wire.HandoffReply) {
	a := c.acq[m.Acquisition]
	if a == nil || a.li.inst.key != (instKey{op: m.Operator, epoch: m.Epoch, index: int(m.Index)}) {
		c.n.log.Debug("reply to a forgotten acquisition", "acq", m.Acquisition, "from", m.Node)
		return
	}
	if m.Status == wire.HandoffReply_NOT_YET && a.abandoned.IsZero() {
		a.notYet[m.Node] = true
		return
	}
	c.n.log.Debug("handoff reply", "instance", a.li.inst.key.String(), "acq", a.id, "from", m.Node, "status", m.Status.String(), "shipped", m.GroupsShipped, "abandoned", !a.abandoned.IsZero())
	// DONE, or NOT_YET to an abandoned acquisition: nothing more comes.
	delete(a.waiting, m.Node)
	delete(a.notYet, m.Node)
	a.answered[m.Node] = true
	a.shipped += int(m.GroupsShipped)
	if a.abandoned.IsZero() {
		// Members the replier knows and we do not may hold the state
		// (it may have been handed to a node that joined since our view):
		// ask them too.
		for _, p := range m.Members {
			if _, known := a.addrs[p.Id]; !known {
				a.addrs[p.Id] = p.Address
				c.ask(a, p.Id)
			}
		}
	}
	if !a.abandoned.IsZero() {
		c.finishAbandoned()
		c.serveWaiting()
		return
	}
	c.checkAll()
}

// onChunk writes shipped state to this node's database.
func (c *coordinator) onChunk(m *wire.HandoffChunk) *wire.HandoffAck {
	kvs := make([]persistence.KV, len(m.Kvs))
	for i, kv := range m.Kvs {
		kvs[i] = persistence.KV{Key: kv.Key, Value: kv.Value}
	}
	c.n.log.Debug("ingesting", "operator", m.Operator, "first", m.FirstGroup, "end", m.EndGroup, "replace", m.Replace, "kvs", len(kvs))
	if err := c.n.db.ImportGroups(m.Operator, int(m.FirstGroup), int(m.EndGroup), m.Replace, kvs); err != nil {
		return &wire.HandoffAck{Error: err.Error()}
	}
	held := c.groups(c.held, m.Operator)
	for g := int(m.FirstGroup); g < int(m.EndGroup) && g < len(held); g++ {
		held[g] = true
	}
	return &wire.HandoffAck{}
}

// checkAll activates instances whose requests have all been answered.
func (c *coordinator) checkAll() {
	for k, a := range c.current {
		if len(a.waiting) > 0 || a.li.state != lsAwaiting {
			continue
		}
		delete(c.current, k)
		delete(c.acq, a.id)
		held := c.groups(c.held, k.op)
		for g := a.li.inst.lo; g < a.li.inst.hi; g++ {
			held[g] = true
		}
		a.li.state = lsActive
		restore := c.n.cfg.StateLog != nil && a.shipped == 0 && !a.heldHere
		c.n.log.Debug("activating", "instance", k.String(), "acq", a.id, "restore", restore)
		c.n.system.Root.Send(a.li.inst.pid, activateMsg{restore: restore})
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
		}
	}
}

// releasedLinger is how long a released instance stays to bounce records
// from producers whose route table is stale.
const releasedLinger = time.Minute

// groups returns the per-group flags of op in m, creating them.
func (c *coordinator) groups(m map[string][]bool, op string) []bool {
	g := m[op]
	if g == nil {
		g = make([]bool, maxKeyGroups)
		m[op] = g
	}
	return g
}

// heldRuns returns the maximal runs of held key groups of op in [first, end).
func (c *coordinator) heldRuns(op string, first, end int) [][2]int {
	held := c.held[op]
	var runs [][2]int
	for g := first; g < end && g < len(held); g++ {
		if !held[g] {
			continue
		}
		if len(runs) > 0 && runs[len(runs)-1][1] == g {
			runs[len(runs)-1][1] = g + 1
		} else {
			runs = append(runs, [2]int{g, g + 1})
		}
	}
	return runs
}

func overlaps(a0, a1, b0, b1 int) bool { return a0 < b1 && b0 < a1 }

// publish builds and publishes the route table for owners.
func (c *coordinator) publish(owners map[instKey]string) {
	addr := make(map[string]string)
	live := make(map[string]bool)
	for _, m := range c.members {
		addr[m.ID] = m.Address
		live[m.Address] = true
	}
	t := &routeTable{streams: make(map[string][]*subscription), live: live, local: c.n.addr}
	if old := c.n.table.Load(); old != nil {
		t.version = old.version + 1
	} else {
		t.version = 1
	}
	for _, spec := range c.topo.Operators {
		m := spec.Meta
		for _, in := range m.Inputs {
			s := &subscription{stream: in.Stream, operator: m.Name, epoch: spec.Epoch, routing: in.Routing, keyGroups: m.KeyGroups,
				pids: make([]*actor.PID, m.Parallelism)}
			for idx := range s.pids {
				k := instKey{op: m.Name, epoch: spec.Epoch, index: idx}
				if id, ok := owners[k]; ok && addr[id] != "" {
					s.pids[idx] = actor.NewPID(addr[id], k.pidID())
				}
			}
			t.streams[in.Stream] = append(t.streams[in.Stream], s)
		}
	}
	c.n.table.Store(t)
	topo := c.topo
	c.n.topo.Store(&topo)
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
