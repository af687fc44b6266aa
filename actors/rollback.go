package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/persistence"
)

// Rollback after a crash (exactly-once). The coordinator picks the newest
// complete checkpoint C and a new generation G and tells every node. Each
// node resets every instance: input held or queued is dropped, output not
// yet sent is discarded, uncommitted state writes and the operator value
// go; batches of earlier generations arriving later are dropped, and those
// of G that arrive before an instance reset wait for it. Then every
// instance that was active on the node restores its key groups from C
// (from the node's own copy of C when it held them, else fetched from the
// store) and starts again, and those awaiting their state ask for it again
// (coordinator.onRolledBack): sources produce again from the positions in C, and
// Committer sinks commit what C had prepared and discard the rest. With
// no complete checkpoint (C = 0) every key group starts empty.

// Rollback messages of this node.
type (
	// resetMsg makes an instance drop everything in flight and wait for
	// its state (generation gen); an instance in gen already (created in
	// it, or reset twice) keeps what it has.
	resetMsg struct{ gen uint64 }
	// ckResetMsg reports an instance's reset into generation gen to the
	// checkpointer.
	ckResetMsg struct {
		key instKey
		gen uint64
	}
	// restoreMsg makes a reset instance restore its key groups from meta
	// (nil: none) and start again.
	restoreMsg struct {
		gen  uint64
		meta *checkpoint.Meta
	}
	// ckRestoringMsg tells the checkpointer which instances the
	// coordinator made restore for the rollback in generation gen.
	ckRestoringMsg struct {
		gen  uint64
		keys []instKey
	}
	// ckRestoredMsg reports an instance's restore.
	ckRestoredMsg struct {
		key instKey
		gen uint64
		err error
	}
)

// nodeRollback is a node's rollback in progress.
type nodeRollback struct {
	gen         uint64
	meta        *checkpoint.Meta
	coordinator *actor.PID
	resetting   map[instKey]*instance
	reported    bool // every instance reset, and the coordinator told so
	placed      bool // the coordinator said which instances restore
	restoring   map[instKey]bool
	restoredOps map[string]int // instances restored, by operator (the timeline's)
	started     time.Time
	failed      error
}

// coordRollback rolls every member back to the newest complete checkpoint
// in a new generation (coordinator). The generation grows with time, so
// that a new coordinator continues the sequence, and is recorded in the
// store before any node hears of it: a node that starts later reads it and
// runs in it (else the others would drop what it sends).
//
// The target is read from the store, not taken from what this node heard:
// a coordinator that crashed after storing checkpoint C may have told some
// nodes, whose sinks then committed C's output, and not this one; rolling
// back to the checkpoint before C would make that output again.
func (c *checkpointer) coordRollback(reason string) {
	r := &c.coord
	if r.pending != nil {
		c.coordAbort("rolling back: " + reason)
	}
	gen := max(uint64(time.Now().UnixNano()), c.gen+1)
	if r.rollback != nil {
		gen = max(gen, r.rollback.gen+1)
	}
	rb := &pendingRollback{gen: gen, started: time.Now(), waiting: make(map[string]bool)}
	r.rollback = rb
	r.again = "" // this one begins after the loss
	r.stats.Rollbacks++
	c.n.log.Warn("rolling every node back to the newest complete checkpoint", "reason", reason, "generation", gen)
	c.n.record(Event{What: EventRollback, Detail: reason})
	if !r.recording {
		c.recordRollback(gen)
	}
}

// recordRollback reads the target of the rollback into generation gen and
// records the generation in the store, on a goroutine: one at a time, so
// that a superseded rollback's record never lands after a newer one's (a
// node starting then would run in the older generation).
func (c *checkpointer) recordRollback(gen uint64) {
	c.coord.recording = true
	store, pid, log := c.store, c.self, c.n.log
	c.n.goFunc(func() {
		delays := backoff.New(200*time.Millisecond, 5*time.Second, 0.2)
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(c.n.life, 30*time.Second)
			meta, err := rollbackTarget(ctx, store, gen)
			cancel()
			if err == nil {
				c.n.system.Root.Send(pid, ckGenRecordedMsg{gen: gen, meta: meta})
				return
			}
			if c.n.life.Err() != nil {
				return
			}
			if attempt == 0 {
				log.Warn("reading the newest checkpoint or recording the rollback generation failed; the rollback waits for the store", "error", err)
			}
			if !backoff.Sleep(c.n.life, delays.Next()) {
				return
			}
		}
	})
}

// rollbackTarget reads the checkpoint a rollback in generation gen goes
// back to (nil: none) and records the generation with it.
func rollbackTarget(ctx context.Context, store *checkpoint.Store, gen uint64) (*checkpoint.Meta, error) {
	var meta *checkpoint.Meta
	m, err := store.Restorable(ctx)
	switch {
	case err == nil:
		meta = &m
	case !errors.Is(err, checkpoint.ErrNotFound):
		return nil, err
	}
	rec := checkpoint.Generation{Gen: gen, At: time.Now()}
	if meta != nil {
		rec.Checkpoint = meta.ID
	}
	return meta, store.SetGeneration(ctx, rec)
}

// ckGenRecordedMsg tells the coordinator that generation gen is recorded,
// going back to checkpoint meta (nil: none).
type ckGenRecordedMsg struct {
	gen  uint64
	meta *checkpoint.Meta
}

// coordOnGenRecorded sends the rollback of a recorded generation to every
// member.
func (c *checkpointer) coordOnGenRecorded(m ckGenRecordedMsg) {
	c.coord.recording = false
	rb := c.coord.rollback
	if rb == nil {
		return
	}
	if rb.gen != m.gen {
		c.recordRollback(rb.gen) // superseded while recorded: record the newest
		return
	}
	c.latest = m.meta
	msg := &wire.Rollback{Generation: rb.gen, Coordinator: c.self}
	if m.meta != nil {
		rb.target = m.meta.ID
		b, err := json.Marshal(m.meta)
		if err != nil {
			c.n.log.Error("encoding checkpoint metadata failed", "error", err)
			return
		}
		msg.Checkpoint, msg.Meta = m.meta.ID, b
	}
	c.n.log.Info("rollback target read from the store", "generation", rb.gen, "checkpoint", rb.target)
	rb.started = time.Now()
	for _, mem := range c.view.members {
		rb.waiting[mem.ID] = true
		c.n.system.Root.Send(actor.NewPID(mem.Address, checkpointerName), msg)
	}
}

// coordOnRollbackDone records a member's finished rollback.
func (c *checkpointer) coordOnRollbackDone(m *wire.RollbackDone) {
	rb := c.coord.rollback
	if rb == nil || rb.gen != m.Generation || !rb.waiting[m.Node] {
		return
	}
	if m.Error != "" {
		c.n.log.Error("a node failed to roll back; rolling back again", "node", m.Node, "error", m.Error)
		c.coordRollback(fmt.Sprintf("node %s: %s", m.Node, m.Error))
		return
	}
	delete(rb.waiting, m.Node)
	if len(rb.waiting) == 0 {
		c.coord.rollback = nil
		c.coord.next = time.Now().Add(c.cfg.Interval)
		c.n.log.Info("rollback done", "generation", rb.gen, "checkpoint", rb.target, "took", time.Since(rb.started).Round(time.Millisecond))
		if again := c.coord.again; again != "" {
			c.coordRollback(again) // batches lost in flight during this one
		}
	}
}

// onRollback starts this node's rollback.
func (c *checkpointer) onRollback(m *wire.Rollback) {
	if m.Generation <= c.rolledBack {
		// Done already (a repeated message): say so again.
		c.n.system.Root.Send(m.Coordinator, &wire.RollbackDone{Generation: m.Generation, Node: c.n.cfg.NodeID})
		return
	}
	var meta *checkpoint.Meta
	if m.Checkpoint != 0 {
		meta = new(checkpoint.Meta)
		if err := json.Unmarshal(m.Meta, meta); err != nil {
			c.n.system.Root.Send(m.Coordinator, &wire.RollbackDone{Generation: m.Generation, Node: c.n.cfg.NodeID, Error: err.Error()})
			return
		}
		c.latest = meta
	} else {
		c.latest = nil
	}
	c.failPart("rolling back")
	c.gen, c.inGen = m.Generation, true
	c.n.gen.Store(m.Generation)
	c.n.setBase(meta)
	rb := &nodeRollback{gen: m.Generation, meta: meta, coordinator: m.Coordinator,
		resetting: make(map[instKey]*instance), restoring: make(map[instKey]bool), started: time.Now()}
	c.rb = rb
	for _, inst := range c.n.instances() {
		rb.resetting[inst.key] = inst
		c.n.system.Root.Send(inst.pid, resetMsg{gen: m.Generation})
	}
	c.maybeRestore()
}

// onReset records an instance's reset.
func (c *checkpointer) onReset(m ckResetMsg) {
	if c.rb == nil || m.gen != c.rb.gen {
		return
	}
	delete(c.rb.resetting, m.key)
	c.maybeRestore()
}

// maybeRestore tells the coordinator once every instance reset: it makes
// those that were active restore (onRolledBack) and says which.
func (c *checkpointer) maybeRestore() {
	rb := c.rb
	if rb == nil || rb.reported || len(rb.resetting) > 0 {
		return
	}
	rb.reported = true
	c.n.system.Root.Send(c.n.coord, rolledBackMsg{gen: rb.gen, meta: rb.meta})
}

// onRestoring records which instances restore for the rollback.
func (c *checkpointer) onRestoring(m ckRestoringMsg) {
	rb := c.rb
	if rb == nil || m.gen != rb.gen || rb.placed {
		return
	}
	rb.placed = true
	rb.restoredOps = make(map[string]int)
	for _, k := range m.keys {
		rb.restoring[k] = true
		rb.restoredOps[k.op]++
	}
	c.maybeFinishRollback()
}

// onRestored records an instance's restore.
func (c *checkpointer) onRestored(m ckRestoredMsg) {
	rb := c.rb
	if rb == nil || m.gen != rb.gen || !rb.restoring[m.key] {
		return
	}
	delete(rb.restoring, m.key)
	if m.err != nil && rb.failed == nil {
		rb.failed = m.err
	}
	c.maybeFinishRollback()
}

// maybeFinishRollback reports the rollback once every instance restored.
func (c *checkpointer) maybeFinishRollback() {
	rb := c.rb
	if rb == nil || !rb.placed || len(rb.resetting) > 0 || len(rb.restoring) > 0 {
		return
	}
	c.rb = nil
	c.rolledBack = rb.gen
	c.n.restorer.CloseAll()
	done := &wire.RollbackDone{Generation: rb.gen, Node: c.n.cfg.NodeID}
	if rb.failed != nil {
		done.Error = rb.failed.Error()
	} else if rb.meta != nil {
		c.n.restoredEvent(rb.meta.ID, rb.restoredOps, "by the rollback", time.Since(rb.started))
	}
	c.n.system.Root.Send(rb.coordinator, done)
}

// reset drops everything the instance holds in flight and waits for its
// state (rollback generation gen).
func (i *instance) reset(gen uint64) {
	i.gen = gen
	for _, u := range i.stash {
		if u.kind == unitBatch {
			dequeued(i.node, u.batch)
		}
	}
	i.stash = nil
	for _, b := range i.ins.blocked {
		dequeued(i.node, b)
	}
	i.ins = inputs{}
	i.cur = work{}
	i.setBlocked(false)
	i.timers.stop()
	i.timers = newTimerQueue()
	if i.pollTimer != nil {
		i.pollTimer.Stop()
	}
	i.pollQueued = false
	i.dur = durability{}
	fc := i.node.flowConfig()
	fc.Operator, fc.Index = i.key.op, i.key.index
	i.out = flow.New(host{i.node}, fc, i.node.replyTo(i.pid), uint64(gen)<<32+uint64(i.key.index))
	i.out.SetGeneration(gen)
	i.store.Discard()
	if i.mode == modeActive {
		i.closeOperator()
	}
	i.opv = nil
	i.ckHold = 0
	i.resetEventTime()
	if i.mode != modeReleased {
		i.mode = modeAwaiting
		i.setState(StateAwaiting)
	}
	future := i.future
	i.future = nil
	for _, b := range future {
		i.input(unit{kind: unitBatch, batch: b}) // stashed until restored
	}
	i.reportReleased() // a released instance's output was discarded
}

// restoreAndStart restores the instance's key groups from meta and starts
// it again.
func (i *instance) restoreAndStart(gen uint64, meta *checkpoint.Meta) error {
	if i.mode != modeAwaiting || gen != i.gen {
		return nil
	}
	if err := i.node.restoreGroups(meta, i.key.op, i.lo, i.hi); err != nil {
		i.setLastError(err.Error())
		return err
	}
	i.restoredGen = gen
	i.activate()
	if meta != nil {
		i.commitSink(meta.ID)
	}
	return nil
}

// admit decides what to do with a batch given the rollback generations:
// it reports whether the batch is for now. A batch of an earlier
// generation is dropped (its producer rolled back too); one of a later
// generation waits until the instance resets into it.
func (i *instance) admit(b *batchMsg) bool {
	switch {
	case b.Gen == i.gen:
		return true
	case b.Gen < i.gen:
		dequeued(i.node, b)
		return false
	default:
		i.future = append(i.future, b)
		return false
	}
}

// restoreGroups replaces the node's data of op's key groups [first, end)
// with checkpoint meta's (nothing, for groups meta does not cover or a nil
// meta).
func (n *Node) restoreGroups(meta *checkpoint.Meta, op string, first, end int) error {
	if meta == nil {
		return n.db.DeleteGroups(op, first, end)
	}
	n.restorer.Begin()
	defer n.restorer.End()
	// Each part restored replaces its groups whole (RestoreGroups excises
	// them); the groups no part covers are emptied here. (A range deletion
	// over the restored groups too would make each restore wait for the
	// memtable holding it to be flushed.)
	parts := meta.Find(op, first, end)
	slices.SortFunc(parts, func(a, b checkpoint.Located) int { return a.Groups.First - b.Groups.First })
	next := first
	for _, loc := range parts {
		if loc.Groups.First > next {
			if err := n.db.DeleteGroups(op, next, loc.Groups.First); err != nil {
				return err
			}
		}
		next = max(next, loc.Groups.End)
	}
	if next < end {
		if err := n.db.DeleteGroups(op, next, end); err != nil {
			return err
		}
	}
	tmp := filepath.Join(persistence.CheckpointDir(n.cfg.DataDir), "tmp")
	for _, loc := range parts {
		snap, err := n.restorer.Open(meta, loc.Node)
		if err != nil {
			return fmt.Errorf("restore %s [%d,%d) from checkpoint %d: %w", op, first, end, meta.ID, err)
		}
		if _, _, err := n.db.RestoreGroups(snap, op, loc.Groups.First, loc.Groups.End, tmp); err != nil {
			return fmt.Errorf("restore %s [%d,%d) from checkpoint %d: %w", op, first, end, meta.ID, err)
		}
	}
	return nil
}

// setBase sets the checkpoint instances restore from when activated
// without state handed over by a live node (nil: none, start empty).
func (n *Node) setBase(meta *checkpoint.Meta) { n.base.Store(meta) }

// Batches lost in flight after a rollback. The coordinator rolls back as
// soon as its own view shows a crash; another node may hear of the
// rollback before it sees the crash itself, reset, and send batches of the
// new generation to the crashed process at its old address. When it does
// see the crash its producers give them up, and no rollback covers them:
// the one under way began before they were sent. So a node that gives up
// batches to a crashed process tells the coordinator their generation and
// where they went (wire.LostInFlight). The coordinator rolls every node
// back again when the loss came after a rollback for that crash began: it
// had seen the crash (its view is without that process) and no rollback
// into a later generation had begun. It waits for the rollback under way
// to finish first (a rollback superseded while nodes restore is a needless
// second restore). A loss it hears of before it sees the crash is covered
// by the rollback it starts when it does. None can have completed a
// checkpoint past the loss meanwhile: the node's part of it comes after
// the report, on the same way to the coordinator, and a checkpoint needs
// the crashed process's part while the coordinator's view still has it.

// crashedAddrs is how many addresses of crashed processes a node keeps.
const crashedAddrs = 64

// ckLostInFlightMsg tells the checkpointer that producers here gave up on
// batches of generation gen in flight to the crashed process at actor
// address addr (what: which batches).
type ckLostInFlightMsg struct {
	gen  uint64
	addr string
	what string
}

// noteCrashed records that the node process at actor address addr
// crashed. The coordinator calls it before it publishes the route table
// without that process, so a producer that gives up on batches to it
// finds it here.
func (n *Node) noteCrashed(addr string) {
	var list []string
	if p := n.dead.Load(); p != nil {
		list = *p
	}
	list = append(slices.Clone(list[max(0, len(list)-crashedAddrs+1):]), addr)
	n.dead.Store(&list)
}

// crashed reports whether the process at actor address addr crashed.
func (n *Node) crashed(addr string) bool {
	p := n.dead.Load()
	return p != nil && slices.Contains(*p, addr)
}

// lostInFlight handles batches a producer here gave up on (flow.Host):
// they were in flight to a node process that left. One that left in good
// order bounces what it did not process; a crashed one took them with it,
// and under exactly-once the coordinator hears of it.
func (n *Node) lostInFlight(stream string, to flow.Endpoint, batches int, gen uint64) {
	crashed := n.crashed(to.Addr)
	n.log.Warn("batches in flight to a node that left are lost", "stream", stream, "to", to.String(), "batches", batches,
		"crashed", crashed, "generation", gen)
	if crashed && n.ckpt != nil && n.guarantee() == core.ExactlyOnce {
		n.system.Root.Send(n.ckpt, ckLostInFlightMsg{gen: gen, addr: to.Addr, what: fmt.Sprintf("%d batches of %s to %s", batches, stream, to)})
	}
}

// onLostInFlight reports batches given up to every member's checkpointer:
// the coordinator acts on it (coordOnLostInFlight). Every member, not the
// one this node takes for the coordinator: its view may lag, and a member
// that does not coordinate ignores it. A report that comes before this
// checkpointer's view is without the crashed process (the node publishes
// its route table first) waits for that view: the old one may name the
// crashed process as the coordinator (sendHeldLost).
func (c *checkpointer) onLostInFlight(m ckLostInFlightMsg) {
	c.heldLost = append(c.heldLost, &wire.LostInFlight{Node: c.n.cfg.NodeID, Generation: m.gen, Address: m.addr, Reason: m.what})
	c.sendHeldLost()
}

// sendHeldLost sends the held loss reports whose crashed process is out of
// the view.
func (c *checkpointer) sendHeldLost() {
	keep := c.heldLost[:0]
	for _, msg := range c.heldLost {
		if c.inView(msg.Address) {
			keep = append(keep, msg)
			continue
		}
		for _, mem := range c.view.members {
			c.n.system.Root.Send(actor.NewPID(mem.Address, checkpointerName), msg)
		}
	}
	clear(c.heldLost[len(keep):])
	c.heldLost = keep
}

// coordOnLostInFlight rolls every node back again when a node lost
// batches after a rollback for the crash they were lost to began (see
// above), once the rollback under way, if any, is done.
func (c *checkpointer) coordOnLostInFlight(m *wire.LostInFlight) {
	r := &c.coord
	if !r.leader {
		return
	}
	newest := c.gen
	if r.rollback != nil {
		newest = max(newest, r.rollback.gen)
	}
	seen := !c.inView(m.Address)
	if m.Generation < newest || !seen {
		c.n.log.Debug("batches lost in flight before a rollback that covers them", "node", m.Node, "generation", m.Generation,
			"newest", newest, "crash seen", seen, "batches", m.Reason)
		return
	}
	reason := fmt.Sprintf("node %s gave up on record batches of generation %d in flight to a crashed node (%s)", m.Node, m.Generation, m.Reason)
	if r.rollback != nil {
		r.again = reason // coordOnRollbackDone
		return
	}
	c.coordRollback(reason)
}

// inView reports whether the checkpointer's view has a member at actor
// address addr.
func (c *checkpointer) inView(addr string) bool {
	return slices.ContainsFunc(c.view.members, func(mem cluster.Member) bool { return mem.Address == addr })
}
