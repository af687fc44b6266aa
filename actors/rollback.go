package actors

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/sluicehq/sluice/actors/ckpt"
	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/persistence"
)

// Rollback after a crash (exactly-once), an instance's and the node's
// part; the checkpointer's is package actors/ckpt (rollback.go). The
// checkpoint coordinator picks the newest
// complete checkpoint C and a new generation G and tells every node. Each
// node resets every instance: input held or queued is dropped, output not
// yet sent is discarded, uncommitted state writes and the operator value
// go; batches of earlier generations arriving later are dropped, and those
// of G that arrive before an instance reset wait for it. Then every
// instance that was active on the node restores its key groups from C
// (from the node's own copy of C when it held them, else fetched from the
// store) and starts again, and those awaiting their state ask for it again
// (handoff.Coordinator.onRolledBack): sources produce again from the
// positions in C, and Committer sinks commit what C had prepared and
// discard the rest. With no complete checkpoint (C = 0) every key group
// starts empty.

// restoreMsg makes a reset instance restore its key groups from meta
// (nil: none) and start again (the placement coordinator's, once the
// checkpointer's rollback reset every instance: see package actors/ckpt).
type restoreMsg struct {
	gen  uint64
	meta *checkpoint.Meta
}

// reset drops everything the instance holds in flight and waits for its
// state (rollback generation gen).
func (i *instance) reset(gen uint64) {
	i.ck.gen = gen
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
	fc.Operator, fc.Index, fc.Epoch = i.key.op, i.key.index, i.key.epoch
	i.out = flow.New(host{i.node}, fc, i.node.replyTo(i.pid), uint64(gen)<<32+uint64(i.key.index))
	i.out.SetGeneration(gen)
	i.store.Discard()
	if i.mode == modeActive {
		i.closeOperator()
	}
	i.opv = nil
	i.ck.hold = 0
	i.resetEventTime()
	if i.mode != modeReleased {
		i.mode = modeAwaiting
		i.setState(status.StateAwaiting)
	}
	future := i.ck.future
	i.ck.future = nil
	for _, b := range future {
		i.input(unit{kind: unitBatch, batch: b}) // stashed until restored
	}
	i.reportReleased() // a released instance's output was discarded
}

// restoreAndStart restores the instance's key groups from meta and starts
// it again.
func (i *instance) restoreAndStart(gen uint64, meta *checkpoint.Meta) error {
	if i.mode != modeAwaiting || gen != i.ck.gen {
		return nil
	}
	if err := i.node.restoreGroups(meta, i.key.op, i.lo, i.hi); err != nil {
		i.setLastError(err.Error())
		return err
	}
	i.ck.restoredGen = gen
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
	case b.Gen == i.ck.gen:
		return true
	case b.Gen < i.ck.gen:
		dequeued(i.node, b)
		return false
	default:
		i.ck.future = append(i.ck.future, b)
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
		n.system.Root.Send(n.ckpt, ckpt.LostInFlight{Gen: gen, Addr: to.Addr, What: fmt.Sprintf("%d batches of %s to %s", batches, stream, to)})
	}
}
