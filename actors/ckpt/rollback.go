package ckpt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/backoff"
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
// (Node.RolledBack): sources produce again from the positions in C, and
// Committer sinks commit what C had prepared and discard the rest. With
// no complete checkpoint (C = 0) every key group starts empty.

// nodeRollback is a node's rollback in progress.
type nodeRollback struct {
	gen         uint64
	meta        *checkpoint.Meta
	coordinator *actor.PID
	resetting   map[Key]bool
	reported    bool // every instance reset, and the coordinator told so
	placed      bool // the coordinator said which instances restore
	restoring   map[Key]bool
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
func (c *Checkpointer) coordRollback(reason string) {
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
	c.log.Warn("rolling every node back to the newest complete checkpoint", "reason", reason, "generation", gen)
	c.n.RollingBack(reason)
	if !r.recording {
		c.recordRollback(gen)
	}
}

// recordRollback reads the target of the rollback into generation gen and
// records the generation in the store, on a goroutine: one at a time, so
// that a superseded rollback's record never lands after a newer one's (a
// node starting then would run in the older generation).
func (c *Checkpointer) recordRollback(gen uint64) {
	c.coord.recording = true
	store, pid, log := c.store, c.self, c.log
	c.n.Go(func() {
		delays := backoff.New(200*time.Millisecond, 5*time.Second, 0.2)
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(c.n.Life(), 30*time.Second)
			meta, err := rollbackTarget(ctx, store, gen)
			cancel()
			if err == nil {
				c.root.Send(pid, genRecordedMsg{Gen: gen, Meta: meta})
				return
			}
			if c.n.Life().Err() != nil {
				return
			}
			if attempt == 0 {
				log.Warn("reading the newest checkpoint or recording the rollback generation failed; the rollback waits for the store", "error", err)
			}
			if !backoff.Sleep(c.n.Life(), delays.Next()) {
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

// genRecordedMsg tells the coordinator that generation gen is recorded,
// going back to checkpoint meta (nil: none).
type genRecordedMsg struct {
	Gen  uint64
	Meta *checkpoint.Meta
}

// coordOnGenRecorded sends the rollback of a recorded generation to every
// member.
func (c *Checkpointer) coordOnGenRecorded(m genRecordedMsg) {
	c.coord.recording = false
	rb := c.coord.rollback
	if rb == nil {
		return
	}
	if rb.gen != m.Gen {
		c.recordRollback(rb.gen) // superseded while recorded: record the newest
		return
	}
	c.latest = m.Meta
	msg := &wire.Rollback{Generation: rb.gen, Coordinator: c.self}
	if m.Meta != nil {
		rb.target = m.Meta.ID
		b, err := json.Marshal(m.Meta)
		if err != nil {
			c.log.Error("encoding checkpoint metadata failed", "error", err)
			return
		}
		msg.Checkpoint, msg.Meta = m.Meta.ID, b
	}
	c.log.Info("rollback target read from the store", "generation", rb.gen, "checkpoint", rb.target)
	rb.started = time.Now()
	for _, mem := range c.view.Members {
		rb.waiting[mem.ID] = true
		c.root.Send(actor.NewPID(mem.Address, checkpointerName), msg)
	}
}

// coordOnRollbackDone records a member's finished rollback.
func (c *Checkpointer) coordOnRollbackDone(m *wire.RollbackDone) {
	rb := c.coord.rollback
	if rb == nil || rb.gen != m.Generation || !rb.waiting[m.Node] {
		return
	}
	if m.Error != "" {
		c.log.Error("a node failed to roll back; rolling back again", "node", m.Node, "error", m.Error)
		c.coordRollback(fmt.Sprintf("node %s: %s", m.Node, m.Error))
		return
	}
	delete(rb.waiting, m.Node)
	if len(rb.waiting) == 0 {
		c.coord.rollback = nil
		c.coord.next = time.Now().Add(c.cfg.Interval)
		c.log.Info("rollback done", "generation", rb.gen, "checkpoint", rb.target, "took", time.Since(rb.started).Round(time.Millisecond))
		if again := c.coord.again; again != "" {
			c.coordRollback(again) // batches lost in flight during this one
		}
	}
}

// onRollback starts this node's rollback.
func (c *Checkpointer) onRollback(m *wire.Rollback) {
	if m.Generation <= c.rolledBack {
		// Done already (a repeated message): say so again.
		c.root.Send(m.Coordinator, &wire.RollbackDone{Generation: m.Generation, Node: c.id})
		return
	}
	var meta *checkpoint.Meta
	if m.Checkpoint != 0 {
		meta = new(checkpoint.Meta)
		if err := json.Unmarshal(m.Meta, meta); err != nil {
			c.root.Send(m.Coordinator, &wire.RollbackDone{Generation: m.Generation, Node: c.id, Error: err.Error()})
			return
		}
		c.latest = meta
	} else {
		c.latest = nil
	}
	c.failPart("rolling back")
	c.gen, c.inGen = m.Generation, true
	c.n.SetGeneration(m.Generation)
	c.n.SetBase(meta)
	rb := &nodeRollback{gen: m.Generation, meta: meta, coordinator: m.Coordinator,
		resetting: make(map[Key]bool), restoring: make(map[Key]bool), started: time.Now()}
	c.rb = rb
	for _, inst := range c.n.Instances() {
		rb.resetting[inst.Key] = true
		c.root.Send(inst.PID, Reset{Gen: m.Generation})
	}
	c.maybeRestore()
}

// onReset records an instance's reset.
func (c *Checkpointer) onReset(m ResetDone) {
	if c.rb == nil || m.Gen != c.rb.gen {
		return
	}
	delete(c.rb.resetting, m.Key)
	c.maybeRestore()
}

// maybeRestore tells the coordinator once every instance reset: it makes
// those that were active restore (onRolledBack) and says which.
func (c *Checkpointer) maybeRestore() {
	rb := c.rb
	if rb == nil || rb.reported || len(rb.resetting) > 0 {
		return
	}
	rb.reported = true
	c.n.RolledBack(rb.gen, rb.meta)
}

// onRestoring records which instances restore for the rollback.
func (c *Checkpointer) onRestoring(m Restoring) {
	rb := c.rb
	if rb == nil || m.Gen != rb.gen || rb.placed {
		return
	}
	rb.placed = true
	rb.restoredOps = make(map[string]int)
	for _, k := range m.Keys {
		rb.restoring[k] = true
		rb.restoredOps[k.Op]++
	}
	c.maybeFinishRollback()
}

// onRestored records an instance's restore.
func (c *Checkpointer) onRestored(m Restored) {
	rb := c.rb
	if rb == nil || m.Gen != rb.gen || !rb.restoring[m.Key] {
		return
	}
	delete(rb.restoring, m.Key)
	if m.Err != nil && rb.failed == nil {
		rb.failed = m.Err
	}
	c.maybeFinishRollback()
}

// maybeFinishRollback reports the rollback once every instance restored.
func (c *Checkpointer) maybeFinishRollback() {
	rb := c.rb
	if rb == nil || !rb.placed || len(rb.resetting) > 0 || len(rb.restoring) > 0 {
		return
	}
	c.rb = nil
	c.rolledBack = rb.gen
	c.restorer.CloseAll()
	done := &wire.RollbackDone{Generation: rb.gen, Node: c.id}
	if rb.failed != nil {
		done.Error = rb.failed.Error()
	} else if rb.meta != nil {
		c.n.Restored(rb.meta.ID, rb.restoredOps, time.Since(rb.started))
	}
	c.root.Send(rb.coordinator, done)
}

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

// onLostInFlight reports batches given up to every member's checkpointer:
// the coordinator acts on it (coordOnLostInFlight). Every member, not the
// one this node takes for the coordinator: its view may lag, and a member
// that does not coordinate ignores it. A report that comes before this
// checkpointer's view is without the crashed process (the node publishes
// its route table first) waits for that view: the old one may name the
// crashed process as the coordinator (sendHeldLost).
func (c *Checkpointer) onLostInFlight(m LostInFlight) {
	c.heldLost = append(c.heldLost, &wire.LostInFlight{Node: c.id, Generation: m.Gen, Address: m.Addr, Reason: m.What})
	c.sendHeldLost()
}

// sendHeldLost sends the held loss reports whose crashed process is out of
// the view.
func (c *Checkpointer) sendHeldLost() {
	keep := c.heldLost[:0]
	for _, msg := range c.heldLost {
		if c.inView(msg.Address) {
			keep = append(keep, msg)
			continue
		}
		for _, mem := range c.view.Members {
			c.root.Send(actor.NewPID(mem.Address, checkpointerName), msg)
		}
	}
	clear(c.heldLost[len(keep):])
	c.heldLost = keep
}

// coordOnLostInFlight rolls every node back again when a node lost
// batches after a rollback for the crash they were lost to began (see
// above), once the rollback under way, if any, is done.
func (c *Checkpointer) coordOnLostInFlight(m *wire.LostInFlight) {
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
		c.log.Debug("batches lost in flight before a rollback that covers them", "node", m.Node, "generation", m.Generation,
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
func (c *Checkpointer) inView(addr string) bool {
	return slices.ContainsFunc(c.view.Members, func(mem cluster.Member) bool { return mem.Address == addr })
}
