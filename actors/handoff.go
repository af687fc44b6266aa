package actors

// The state handoff between nodes: an instance placed here acquires its key
// groups by asking every member (HandoffRequest); a member ships what it
// holds (HandoffChunks) once it no longer runs an overlapping instance. See
// the coordinator for when acquisitions start and what the answers mean.

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/ckpt"
	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/placement"
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
	gen       uint64    // the coordinator's generation when it started
}

// abandonedTimeout bounds how long an abandoned acquisition waits for
// answers (in case one was lost).
const abandonedTimeout = 30 * time.Second

// startAcquisition asks every member (this node included) for the state of
// k's key groups.
func (c *coordinator) startAcquisition(k instKey, li *localInst) {
	c.abandon(k)
	c.nextAcq++
	a := &acquisition{id: c.nextAcq, li: li, waiting: make(map[string]time.Time), notYet: make(map[string]bool),
		answered: make(map[string]bool), addrs: make(map[string]string), gen: c.gen}
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
		Leaving: c.leaving[c.selfID],
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
	if req.Requester != c.selfID && c.leaving[req.Requester] && !req.Leaving {
		c.unleave(req.Requester) // a requester that is not leaving says so
	}
	if c.rollingBack() {
		// What this node holds may be from after the checkpoint the
		// cluster goes back to: answer once onRolledBack dropped that.
		c.n.log.Debug("request waits for the rollback", "operator", req.Operator, "first", first, "end", end, "requester", req.Requester, "acq", req.Acquisition)
		c.waiting = append(c.waiting, req)
		return
	}
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
	n, gen := c.n, c.gen
	n.goFunc(func() {
		err := n.export(req, runs, gen)
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
	switch {
	case errors.Is(m.err, errRolledBack):
		c.n.log.Info("state handoff stopped by a rollback", "operator", m.req.Operator, "to", m.req.Requester, "error", m.err)
	case m.err != nil:
		c.n.log.Warn("state handoff failed; will retry when asked again", "operator", m.req.Operator, "to", m.req.Requester, "error", m.err)
	default:
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
		Staying: !c.leaving[c.selfID],
	}
	if status == wire.HandoffReply_DONE {
		for _, m := range c.members {
			r.Members = append(r.Members, &wire.Peer{Id: m.ID, Address: m.Address})
		}
	}
	c.n.system.Root.Send(req.ReplyTo, r)
}

// unleave places on member id again: it was taken for leaving, but it
// says it is not (in a request or a reply). The Leaving came from an earlier
// incarnation's last moments, or was forged (a cluster without node
// certificates cannot tell). Otherwise this node would wait for ever for
// state that member will not hand over while it runs its instances, and
// the member for state this node keeps (issue 31: two nodes wedged for
// 17 minutes on one forged Leaving). A member that does leave announces
// it on the same stream before any request or reply that says so.
func (c *coordinator) unleave(id string) {
	c.n.log.Warn("a node taken for leaving is staying: placing on it again (a stale or forged Leaving)", "node", id)
	delete(c.leaving, id)
	c.apply()
}

// onReply records a member's answer to one of our requests.
func (c *coordinator) onReply(m *wire.HandoffReply) {
	if m.Staying && m.Node != c.selfID && c.leaving[m.Node] {
		c.unleave(m.Node)
	}
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
//
// A chunk read in another rollback generation than this node's is refused:
// if the sender's is older, this node rolled back since and restores these
// key groups from the checkpoint (or did already; writing the chunk now
// would put state from after the checkpoint under an instance that replays
// from it); if newer, this node's rollback is on its way and will.
//
// So is any chunk while this node rolls back: the groups it writes would
// be dropped as stale when the rollback ends here (the sender keeps them
// and ships them again when asked again).
func (c *coordinator) onChunk(m *wire.HandoffChunk) *wire.HandoffAck {
	if gen, rolling := c.n.gen.Load(), c.rollingBack(); m.Generation != gen || rolling {
		c.n.log.Info("refused a handoff chunk of another rollback generation, or during a rollback", "operator", m.Operator,
			"first", m.FirstGroup, "end", m.EndGroup, "chunk generation", m.Generation, "generation", gen, "rolling back", rolling)
		return &wire.HandoffAck{Error: fmt.Sprintf("%v: chunk of generation %d, receiver in %d (rolling back: %t)", errRolledBack, m.Generation, gen, rolling)}
	}
	kvs := make([]persistence.KV, len(m.Kvs))
	for i, kv := range m.Kvs {
		kvs[i] = persistence.KV{Key: kv.Key, Value: kv.Value}
	}
	c.n.log.Debug("ingesting", "operator", m.Operator, "first", m.FirstGroup, "end", m.EndGroup, "replace", m.Replace, "kvs", len(kvs))
	if err := c.n.db.ImportGroups(m.Operator, int(m.FirstGroup), int(m.EndGroup), m.Replace, kvs); err != nil {
		return &wire.HandoffAck{Error: err.Error()}
	}
	held := c.groups(c.held, m.Operator)
	startup := c.startup[m.Operator] // what it replaces is not what this node started with
	for g := int(m.FirstGroup); g < int(m.EndGroup) && g < len(held); g++ {
		held[g] = true
		if startup != nil {
			startup[g] = false
		}
	}
	return &wire.HandoffAck{}
}

// askedOf reports whether this node waits for a node that the certificate
// named peer speaks for (speaksFor) to answer an acquisition of the key
// groups of chunk m: only such a node may send state here. It logs a chunk
// from any other node, which the caller refuses.
func (c *coordinator) askedOf(peer string, m *wire.HandoffChunk) bool {
	for _, a := range c.acq {
		inst := a.li.inst
		if inst.key.op != m.Operator || int(m.FirstGroup) < inst.lo || int(m.EndGroup) > inst.hi || m.FirstGroup >= m.EndGroup {
			continue
		}
		for node := range a.waiting {
			if speaksFor(peer, node) {
				return true
			}
		}
	}
	c.n.log.Warn("dropped a handoff chunk from a node not asked for those key groups", "certificate", peer,
		"operator", m.Operator, "first", m.FirstGroup, "end", m.EndGroup, "replace", m.Replace)
	return false
}

// checkAll activates instances whose requests have all been answered.
//
// Whether the instance has its state is read from the held groups when it
// activates, not counted from its acquisition's answers: state may have
// landed for an earlier acquisition of the same groups, abandoned since.
func (c *coordinator) checkAll() {
	if c.rollingBack() {
		return // onRolledBack asks again for what the rollback left
	}
	base := c.n.base.Load()
	var fromBase map[string]int // instances restored from it, by operator, for the timeline
	defer func() {
		if fromBase != nil {
			c.n.restoredEvent(base.ID, fromBase, "as they started here", 0)
		}
	}()
	for k, a := range c.current {
		if len(a.waiting) > 0 || a.li.state != lsAwaiting || a.gen != c.gen {
			continue
		}
		delete(c.current, k)
		delete(c.acq, a.id)
		held := c.groups(c.held, k.op)
		have := slices.Contains(held[a.li.inst.lo:a.li.inst.hi], true)
		for g := a.li.inst.lo; g < a.li.inst.hi; g++ {
			held[g] = true
		}
		a.li.state = lsActive
		restore := c.n.cfg.StateLog != nil && !have
		// Exactly-once: state no live member handed over restores from the
		// base checkpoint; so does what this node held when it started (it
		// may be ahead of the newest complete checkpoint).
		fromCk := c.n.cfg.Checkpoints != nil && (!have || a.shipped == 0 && c.takeStartup(k.op, a.li.inst.lo, a.li.inst.hi))
		c.n.log.Debug("activating", "instance", k.String(), "acq", a.id, "restore", restore, "checkpoint", fromCk, "shipped", a.shipped)
		c.n.system.Root.Send(a.li.inst.pid, activateMsg{gen: c.gen, restore: restore, checkpoint: fromCk})
		if fromCk && base != nil && len(base.Find(k.op, a.li.inst.lo, a.li.inst.hi)) > 0 {
			if fromBase == nil {
				fromBase = make(map[string]int)
			}
			fromBase[k.op]++
		}
	}
}

// rollingBack reports whether this node is rolling back: its generation
// moved on and onRolledBack has not run for it yet.
func (c *coordinator) rollingBack() bool { return c.n.gen.Load() != c.gen }

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

// handoffChunkBytes is the approximate size of one HandoffChunk.
const handoffChunkBytes = 256 << 10

// handoffChunkTimeout bounds the wait for a chunk's acknowledgement.
const handoffChunkTimeout = 30 * time.Second

// export ships the data of the key-group runs of req's operator to the
// requester, one acknowledged chunk at a time, then deletes it here. A run
// without data is still sent, as one empty chunk, so that the requester
// drops whatever stale data it had for those groups.
//
// Under exactly-once a rollback stops an export (errRolledBack): the
// rollback restores every key group from a checkpoint, so what was read
// before it is stale; the chunks carry the generation gen they were read
// in and a receiver in another generation refuses them.
func (n *Node) export(req *wire.HandoffRequest, runs [][2]int, gen uint64) error {
	for _, r := range runs {
		first := true
		send := func(kvs []persistence.KV) error {
			if now := n.gen.Load(); now != gen {
				return fmt.Errorf("%w: generation %d, read in %d", errRolledBack, now, gen)
			}
			chunk := &wire.HandoffChunk{Operator: req.Operator, FirstGroup: int32(r[0]), EndGroup: int32(r[1]), Replace: first, Generation: gen}
			first = false
			chunk.Kvs = make([]*wire.KV, len(kvs))
			for i, kv := range kvs {
				chunk.Kvs[i] = &wire.KV{Key: kv.Key, Value: kv.Value}
			}
			res, err := n.system.Root.RequestFuture(req.ReplyTo, chunk, handoffChunkTimeout).Result()
			if err != nil {
				return fmt.Errorf("send chunk to %s: %w", req.Requester, err)
			}
			ack, ok := res.(*wire.HandoffAck)
			if !ok {
				return fmt.Errorf("send chunk to %s: unexpected answer %T", req.Requester, res)
			}
			if ack.Error != "" {
				return fmt.Errorf("%s could not store chunk: %s", req.Requester, ack.Error)
			}
			return nil
		}
		if err := n.db.ExportGroups(req.Operator, r[0], r[1], handoffChunkBytes, send); err != nil {
			return err
		}
		if first {
			if err := send(nil); err != nil {
				return err
			}
		}
		if now := n.gen.Load(); now != gen {
			return fmt.Errorf("%w: generation %d, read in %d", errRolledBack, now, gen)
		}
		if err := n.db.DeleteGroups(req.Operator, r[0], r[1]); err != nil {
			return err
		}
	}
	return nil
}

// errRolledBack stops an export that a rollback made stale.
var errRolledBack = errors.New("rolled back during the handoff")

// takeStartup reports whether some of op's key groups [first, end) were
// held when the node started and not restored since, and forgets them.
func (c *coordinator) takeStartup(op string, first, end int) bool {
	g := c.startup[op]
	found := false
	for i := first; i < end && i < len(g); i++ {
		if g[i] {
			found = true
			g[i] = false
		}
	}
	return found
}

// rolledBackMsg tells the coordinator that every instance of this node
// was reset for the rollback to checkpoint meta (nil: none) in generation
// gen.
type rolledBackMsg struct {
	gen  uint64
	meta *checkpoint.Meta
}

// onRolledBack restores the instances that were active here from the
// rollback's checkpoint, drops the rest of what this node held, and asks
// again for the state of the instances that were awaiting it.
//
// Only the active ones are restored by the rollback: an awaiting instance
// activated now could be active on two nodes at once (the node it waits
// for may run it still, in a view that differs) or have state shipped to
// it under its feet. It stays awaiting, and its acquisition starts again:
// the answers to the old one may carry state from before the rollback.
// When every member has answered the new one, it activates with what was
// shipped in this generation or, if nothing was, restores from the
// checkpoint (the node's base).
func (c *coordinator) onRolledBack(m rolledBackMsg) {
	if m.gen < c.gen {
		return // superseded by a later rollback
	}
	c.gen = m.gen
	restored := make(map[string][][2]int)
	var keys []instKey
	var ckKeys []ckpt.Key
	for k, li := range c.local {
		if spec, ok := c.topo.Find(k.op); li.state != lsActive || !ok || spec.Epoch != k.epoch {
			continue
		}
		keys = append(keys, k)
		ckKeys = append(ckKeys, k.ckKey())
		restored[k.op] = append(restored[k.op], [2]int{li.inst.lo, li.inst.hi})
	}
	c.forgetStale(m.gen, restored)
	// The checkpointer hears which instances restore before any of them
	// reports (local sends are queued in order).
	c.n.system.Root.Send(c.n.ckpt, ckpt.Restoring{Gen: m.gen, Keys: ckKeys})
	for _, k := range keys {
		c.n.system.Root.Send(c.local[k].inst.pid, restoreMsg{gen: m.gen, meta: m.meta})
	}
	var again []instKey
	for k, a := range c.current {
		if a.gen != c.gen {
			again = append(again, k)
		}
	}
	for _, k := range again {
		c.n.log.Debug("asking again for state after the rollback", "instance", k.String(), "generation", m.gen)
		c.startAcquisition(k, c.current[k].li)
	}
	c.serveWaiting()
	c.checkAll()
}

// forgetStale drops the key groups this node held but does not restore in
// the rollback to generation gen (those of instances released here, waiting to be shipped or
// being shipped): their data is from after the checkpoint the cluster went
// back to, so it must not be handed to anyone. A node that asks for them
// is told nothing is here, and restores them from the checkpoint. The state
// of an operator no longer deployed (killed without purge) is no instance's
// and did not change since the kill: it stays for a redeploy.
func (c *coordinator) forgetStale(gen uint64, restored map[string][][2]int) {
	for op, held := range c.held {
		if _, deployed := c.topo.Find(op); !deployed {
			continue
		}
		keep := make([]bool, len(held))
		for _, r := range restored[op] {
			for g := r[0]; g < r[1] && g < len(keep); g++ {
				keep[g] = true
			}
		}
		var stale [][2]int
		for g, h := range held {
			if !h || keep[g] {
				continue
			}
			held[g] = false
			if len(stale) > 0 && stale[len(stale)-1][1] == g {
				stale[len(stale)-1][1] = g + 1
			} else {
				stale = append(stale, [2]int{g, g + 1})
			}
		}
		for _, r := range stale {
			c.n.log.Info("dropping key groups left from before the rollback", "operator", op, "first", r[0], "end", r[1], "generation", gen)
			if err := c.n.db.DeleteGroups(op, r[0], r[1]); err != nil {
				// Not held any more, so never shipped or used; a later
				// acquisition here restores them from a checkpoint.
				c.n.log.Warn("deleting stale key groups failed", "operator", op, "first", r[0], "end", r[1], "error", err)
			}
		}
	}
}
