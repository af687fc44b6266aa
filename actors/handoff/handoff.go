package handoff

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
	"github.com/sluicehq/sluice/internal/core"
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
func (c *Coordinator) startAcquisition(k ckpt.Key, li *localInst) {
	c.abandon(k)
	c.nextAcq++
	a := &acquisition{id: c.nextAcq, li: li, waiting: make(map[string]time.Time), notYet: make(map[string]bool),
		answered: make(map[string]bool), addrs: make(map[string]string), gen: c.gen}
	c.acq[a.id] = a
	c.current[k] = a
	c.log.Debug("acquiring", "instance", k.String(), "acq", a.id, "members", len(c.members))
	a.addrs[c.selfID] = c.addr
	for _, m := range c.members {
		a.addrs[m.ID] = m.Address
	}
	for id := range a.addrs {
		c.ask(a, id)
	}
}

// abandon marks k's live acquisition, if any, as abandoned.
func (c *Coordinator) abandon(k ckpt.Key) {
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
func (c *Coordinator) finishAbandoned() {
	for id, a := range c.acq {
		if !a.abandoned.IsZero() && (len(a.waiting) == 0 || time.Since(a.abandoned) > abandonedTimeout) {
			delete(c.acq, id)
		}
	}
}

// ask sends a's HandoffRequest to member id.
func (c *Coordinator) ask(a *acquisition, id string) {
	inst := a.li.inst
	req := &wire.HandoffRequest{
		Operator: inst.Key.Op, Epoch: inst.Key.Epoch, Index: int32(inst.Key.Index),
		FirstGroup: int32(inst.Lo), EndGroup: int32(inst.Hi),
		Requester: c.selfID, ReplyTo: actor.NewPID(c.addr, coordinatorName), Acquisition: a.id,
		Leaving: c.leaving[c.selfID],
	}
	a.waiting[id] = time.Now()
	delete(a.notYet, id)
	c.root.Send(actor.NewPID(a.addrs[id], coordinatorName), req)
}

// ownerOf returns the node that owns instance k in this node's view, or ""
// (also when k is not in the current topology).
func (c *Coordinator) ownerOf(k ckpt.Key) string {
	spec, ok := c.topo.Find(k.Op)
	if !ok || spec.Epoch != k.Epoch || k.Index >= spec.Meta.Parallelism {
		return ""
	}
	id, _ := placement.Owner(placement.Instance{Operator: k.Op, Kind: spec.Kind, Index: k.Index}, c.placementNodes())
	return id
}

// serve answers a HandoffRequest, now or once local releases finish.
func (c *Coordinator) serve(req *wire.HandoffRequest) {
	first, end := int(req.FirstGroup), int(req.EndGroup)
	reqKey := ckpt.Key{Op: req.Operator, Epoch: req.Epoch, Index: int(req.Index)}
	if req.Requester != c.selfID && c.leaving[req.Requester] && !req.Leaving {
		c.unleave(req.Requester) // a requester that is not leaving says so
	}
	if c.rollingBack() {
		// What this node holds may be from after the checkpoint the
		// cluster goes back to: answer once onRolledBack dropped that.
		c.log.Debug("request waits for the rollback", "operator", req.Operator, "first", first, "end", end, "requester", req.Requester, "acq", req.Acquisition)
		c.waiting = append(c.waiting, req)
		return
	}
	// Answer only a requester that owns the instance in this node's view
	// too: state goes only where both agree it belongs, and a requester
	// whose view is behind (or ahead) waits until the views agree.
	if owner := c.ownerOf(reqKey); owner != req.Requester {
		c.log.Debug("not yet: views differ", "instance", reqKey.String(), "requester", req.Requester, "owner here", owner)
		c.reply(req, wire.HandoffReply_NOT_YET, 0)
		return
	}
	wait := false
	for k, li := range c.local {
		if k.Op != req.Operator || !overlaps(li.inst.Lo, li.inst.Hi, first, end) {
			continue
		}
		self := req.Requester == c.selfID && k == reqKey
		switch li.state {
		case lsAwaiting, lsActive:
			if !self {
				c.log.Debug("not yet", "operator", req.Operator, "first", first, "end", end, "requester", req.Requester, "busy", k.String())
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
		if !a.abandoned.IsZero() && inst.Key.Op == req.Operator && overlaps(inst.Lo, inst.Hi, first, end) {
			wait = true // state may still be arriving for these groups
		}
	}
	if wait {
		c.log.Debug("request waits", "operator", req.Operator, "first", first, "end", end, "requester", req.Requester, "acq", req.Acquisition)
		c.waiting = append(c.waiting, req)
		return
	}
	runs := c.heldRuns(req.Operator, first, end)
	c.log.Debug("serving", "operator", req.Operator, "first", first, "end", end, "requester", req.Requester, "acq", req.Acquisition, "runs", fmt.Sprint(runs))
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
	gen := c.gen
	c.n.Go(func() {
		err := c.export(req, runs, gen)
		c.root.Send(actor.NewPID(c.addr, coordinatorName), exportDone{req: req, runs: runs, err: err, key: key})
	})
}

// onExportDone finishes serving a request whose key groups were shipped.
func (c *Coordinator) onExportDone(m exportDone) {
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
		c.log.Info("state handoff stopped by a rollback", "operator", m.req.Operator, "to", m.req.Requester, "error", m.err)
	case m.err != nil:
		c.log.Warn("state handoff failed; will retry when asked again", "operator", m.req.Operator, "to", m.req.Requester, "error", m.err)
	default:
		c.log.Info("state handed off", "operator", m.req.Operator, "to", m.req.Requester, "groups", shipped)
		c.reply(m.req, wire.HandoffReply_DONE, shipped)
	}
	c.serveWaiting()
}

// serveWaiting retries requests that waited for releases or exports.
func (c *Coordinator) serveWaiting() {
	reqs := c.waiting
	c.waiting = nil
	for _, r := range reqs {
		c.serve(r)
	}
}

// reply answers req.
func (c *Coordinator) reply(req *wire.HandoffRequest, status wire.HandoffReply_Status, shipped int) {
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
	c.root.Send(req.ReplyTo, r)
}

// unleave places on member id again: it was taken for leaving, but it
// says it is not (in a request or a reply). The Leaving came from an earlier
// incarnation's last moments, or was forged (a cluster without node
// certificates cannot tell). Otherwise this node would wait for ever for
// state that member will not hand over while it runs its instances, and
// the member for state this node keeps (issue 31: two nodes wedged for
// 17 minutes on one forged Leaving). A member that does leave announces
// it on the same stream before any request or reply that says so.
func (c *Coordinator) unleave(id string) {
	c.log.Warn("a node taken for leaving is staying: placing on it again (a stale or forged Leaving)", "node", id)
	delete(c.leaving, id)
	c.apply()
}

// onReply records a member's answer to one of our requests.
func (c *Coordinator) onReply(m *wire.HandoffReply) {
	if m.Staying && m.Node != c.selfID && c.leaving[m.Node] {
		c.unleave(m.Node)
	}
	a := c.acq[m.Acquisition]
	if a == nil || a.li.inst.Key != (ckpt.Key{Op: m.Operator, Epoch: m.Epoch, Index: int(m.Index)}) {
		c.log.Debug("reply to a forgotten acquisition", "acq", m.Acquisition, "from", m.Node)
		return
	}
	if m.Status == wire.HandoffReply_NOT_YET && a.abandoned.IsZero() {
		a.notYet[m.Node] = true
		return
	}
	c.log.Debug("handoff reply", "instance", a.li.inst.Key.String(), "acq", a.id, "from", m.Node, "status", m.Status.String(), "shipped", m.GroupsShipped, "abandoned", !a.abandoned.IsZero())
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
func (c *Coordinator) onChunk(m *wire.HandoffChunk) *wire.HandoffAck {
	if gen, rolling := c.n.Generation(), c.rollingBack(); m.Generation != gen || rolling {
		c.log.Info("refused a handoff chunk of another rollback generation, or during a rollback", "operator", m.Operator,
			"first", m.FirstGroup, "end", m.EndGroup, "chunk generation", m.Generation, "generation", gen, "rolling back", rolling)
		return &wire.HandoffAck{Error: fmt.Sprintf("%v: chunk of generation %d, receiver in %d (rolling back: %t)", errRolledBack, m.Generation, gen, rolling)}
	}
	kvs := make([]persistence.KV, len(m.Kvs))
	for i, kv := range m.Kvs {
		kvs[i] = persistence.KV{Key: kv.Key, Value: kv.Value}
	}
	c.log.Debug("ingesting", "operator", m.Operator, "first", m.FirstGroup, "end", m.EndGroup, "replace", m.Replace, "kvs", len(kvs))
	if err := c.db.ImportGroups(m.Operator, int(m.FirstGroup), int(m.EndGroup), m.Replace, kvs); err != nil {
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
// named peer speaks for (transport.SpeaksFor) to answer an acquisition of the key
// groups of chunk m: only such a node may send state here. It logs a chunk
// from any other node, which the caller refuses.
func (c *Coordinator) askedOf(peer string, m *wire.HandoffChunk) bool {
	for _, a := range c.acq {
		inst := a.li.inst
		if inst.Key.Op != m.Operator || int(m.FirstGroup) < inst.Lo || int(m.EndGroup) > inst.Hi || m.FirstGroup >= m.EndGroup {
			continue
		}
		for node := range a.waiting {
			if c.n.SpeaksFor(peer, node) {
				return true
			}
		}
	}
	c.log.Warn("dropped a handoff chunk from a node not asked for those key groups", "certificate", peer,
		"operator", m.Operator, "first", m.FirstGroup, "end", m.EndGroup, "replace", m.Replace)
	return false
}

// checkAll activates instances whose requests have all been answered.
//
// Whether the instance has its state is read from the held groups when it
// activates, not counted from its acquisition's answers: state may have
// landed for an earlier acquisition of the same groups, abandoned since.
func (c *Coordinator) checkAll() {
	if c.rollingBack() {
		return // onRolledBack asks again for what the rollback left
	}
	base := c.n.Base()
	var fromBase map[string]int // instances restored from it, by operator, for the timeline
	defer func() {
		if fromBase != nil {
			c.n.RestoredAtStart(base.ID, fromBase)
		}
	}()
	for k, a := range c.current {
		if len(a.waiting) > 0 || a.li.state != lsAwaiting || a.gen != c.gen {
			continue
		}
		delete(c.current, k)
		delete(c.acq, a.id)
		held := c.groups(c.held, k.Op)
		have := slices.Contains(held[a.li.inst.Lo:a.li.inst.Hi], true)
		for g := a.li.inst.Lo; g < a.li.inst.Hi; g++ {
			held[g] = true
		}
		a.li.state = lsActive
		restore := c.stateLog && !have
		// Exactly-once: state no live member handed over restores from the
		// base checkpoint; so does what this node held when it started (it
		// may be ahead of the newest complete checkpoint).
		fromCk := c.exactlyOnce && (!have || a.shipped == 0 && c.takeStartup(k.Op, a.li.inst.Lo, a.li.inst.Hi))
		c.log.Debug("activating", "instance", k.String(), "acq", a.id, "restore", restore, "checkpoint", fromCk, "shipped", a.shipped)
		c.n.Activate(a.li.inst, c.gen, restore, fromCk)
		if fromCk && base != nil && len(base.Find(k.Op, a.li.inst.Lo, a.li.inst.Hi)) > 0 {
			if fromBase == nil {
				fromBase = make(map[string]int)
			}
			fromBase[k.Op]++
		}
	}
}

// rollingBack reports whether this node is rolling back: its generation
// moved on and onRolledBack has not run for it yet.
func (c *Coordinator) rollingBack() bool { return c.n.Generation() != c.gen }

// groups returns the per-group flags of op in m, creating them.
func (c *Coordinator) groups(m map[string][]bool, op string) []bool {
	g := m[op]
	if g == nil {
		g = make([]bool, core.MaxKeyGroups)
		m[op] = g
	}
	return g
}

// heldRuns returns the maximal runs of held key groups of op in [first, end).
func (c *Coordinator) heldRuns(op string, first, end int) [][2]int {
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

// ChunkBytes is the approximate size of one HandoffChunk (a node's gRPC
// message limit makes room for it).
const ChunkBytes = 256 << 10

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
//
// It runs on a goroutine of its own: it reads only what does not change
// (the root context, the database) and the node's generation.
func (c *Coordinator) export(req *wire.HandoffRequest, runs [][2]int, gen uint64) error {
	for _, r := range runs {
		first := true
		send := func(kvs []persistence.KV) error {
			if now := c.n.Generation(); now != gen {
				return fmt.Errorf("%w: generation %d, read in %d", errRolledBack, now, gen)
			}
			chunk := &wire.HandoffChunk{Operator: req.Operator, FirstGroup: int32(r[0]), EndGroup: int32(r[1]), Replace: first, Generation: gen}
			first = false
			chunk.Kvs = make([]*wire.KV, len(kvs))
			for i, kv := range kvs {
				chunk.Kvs[i] = &wire.KV{Key: kv.Key, Value: kv.Value}
			}
			res, err := c.root.RequestFuture(req.ReplyTo, chunk, handoffChunkTimeout).Result()
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
		if err := c.db.ExportGroups(req.Operator, r[0], r[1], ChunkBytes, send); err != nil {
			return err
		}
		if first {
			if err := send(nil); err != nil {
				return err
			}
		}
		if now := c.n.Generation(); now != gen {
			return fmt.Errorf("%w: generation %d, read in %d", errRolledBack, now, gen)
		}
		if err := c.db.DeleteGroups(req.Operator, r[0], r[1]); err != nil {
			return err
		}
	}
	return nil
}

// errRolledBack stops an export that a rollback made stale.
var errRolledBack = errors.New("rolled back during the handoff")

// takeStartup reports whether some of op's key groups [first, end) were
// held when the node started and not restored since, and forgets them.
func (c *Coordinator) takeStartup(op string, first, end int) bool {
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
func (c *Coordinator) onRolledBack(m RolledBack) {
	if m.Gen < c.gen {
		return // superseded by a later rollback
	}
	c.gen = m.Gen
	restored := make(map[string][][2]int)
	var keys []ckpt.Key
	for k, li := range c.local {
		if spec, ok := c.topo.Find(k.Op); li.state != lsActive || !ok || spec.Epoch != k.Epoch {
			continue
		}
		keys = append(keys, k)
		restored[k.Op] = append(restored[k.Op], [2]int{li.inst.Lo, li.inst.Hi})
	}
	c.forgetStale(m.Gen, restored)
	// The checkpointer hears which instances restore before any of them
	// reports (local sends are queued in order).
	c.root.Send(c.ckpt, ckpt.Restoring{Gen: m.Gen, Keys: keys})
	for _, k := range keys {
		c.n.Restore(c.local[k].inst, m.Gen, m.Meta)
	}
	var again []ckpt.Key
	for k, a := range c.current {
		if a.gen != c.gen {
			again = append(again, k)
		}
	}
	for _, k := range again {
		c.log.Debug("asking again for state after the rollback", "instance", k.String(), "generation", m.Gen)
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
func (c *Coordinator) forgetStale(gen uint64, restored map[string][][2]int) {
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
			c.log.Info("dropping key groups left from before the rollback", "operator", op, "first", r[0], "end", r[1], "generation", gen)
			if err := c.db.DeleteGroups(op, r[0], r[1]); err != nil {
				// Not held any more, so never shipped or used; a later
				// acquisition here restores them from a checkpoint.
				c.log.Warn("deleting stale key groups failed", "operator", op, "first", r[0], "end", r[1], "error", err)
			}
		}
	}
}
