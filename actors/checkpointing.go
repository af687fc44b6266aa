package actors

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/actors/ckpt"
	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/internal/core"
)

// An instance's part in checkpoints (exactly-once; see package actors/ckpt
// for the node's part and the coordinator).
//
// Barrier N reaches an instance on every input edge, in order with the
// records. From the first edge that delivers it, the instance holds back
// that edge's later batches (they are not processed, so not acknowledged:
// the producer is slowed by its credits) until every other active edge has
// delivered barrier N too: then everything it processed is exactly what
// came before the barrier everywhere. It then snapshots: a Committer sink
// pre-commits, the state written so far is committed to the node's
// database, and from then on its writes stay in memory (the hold) until the
// node has copied the database for checkpoint N. It forwards barrier N on
// its outputs, reports to the node's checkpointer and takes up the held
// batches. Instances without upstreams (sources, operators fed from
// outside) snapshot when the checkpointer triggers them.

// exactlyOnce reports whether the node runs checkpoints.
func (i *instance) exactlyOnce() bool { return i.node.guarantee() == core.ExactlyOnce }

// onControl acts on the control record that followed batch m's records.
func (i *instance) onControl(m *batchMsg) {
	c := m.Control
	u, ok := upstreamOf(m)
	if c == nil || !ok {
		return
	}
	i.ins.refresh(i.node.topology(), i.spec)
	switch c.Kind {
	case flow.Barrier:
		if i.exactlyOnce() {
			i.onBarrier(u, c.Checkpoint)
		}
	case flow.Watermark:
		if i.ins.noteWatermark(u, c) {
			i.advanceWatermark()
		}
	case flow.EndOfStream:
		i.ins.noteEnd(u)
		i.advanceWatermark()
		switch {
		case i.ins.aligning != 0 && i.ins.aligned():
			i.snapshotAt(i.ins.aligning, false)
		case i.exactlyOnce() && i.ins.triggered > i.ins.last && i.ins.needsTrigger():
			// Every input ended before its barrier came (a finished
			// source's barrier follows its end-of-stream).
			i.snapshotAt(i.ins.triggered, false)
		}
	}
}

// onBarrier handles barrier id arriving from upstream u.
func (i *instance) onBarrier(u upstream, id uint64) {
	in := &i.ins
	if id <= in.last || !in.active(u) {
		return // an abandoned checkpoint's, or from a producer not in the layout
	}
	if id > in.aligning {
		if in.aligning != 0 {
			i.log.Debug("checkpoint alignment overtaken", "checkpoint", in.aligning, "by", id)
			i.abandonAlignment() // a newer checkpoint overtook it
		}
		i.log.Debug("aligning", "checkpoint", id, "first", fmt.Sprintf("%s/%d", u.op, u.index))
		in.aligning = id
		in.arrived = make(map[upstream]bool)
	}
	in.arrived[u] = true
	if in.aligned() {
		i.snapshotAt(id, false)
	}
}

// abandonAlignment stops aligning and takes up the held batches.
func (i *instance) abandonAlignment() {
	in := &i.ins
	in.last = max(in.last, in.aligning)
	in.aligning, in.arrived = 0, nil
	i.releaseBlocked()
}

// releaseBlocked puts the batches held for alignment back in front of the
// stash, in the order they arrived.
func (i *instance) releaseBlocked() {
	in := &i.ins
	if len(in.blocked) == 0 {
		return
	}
	units := make([]unit, 0, len(in.blocked)+len(i.stash))
	for _, b := range in.blocked {
		units = append(units, unit{kind: unitBatch, batch: b})
	}
	clear(in.blocked)
	in.blocked = in.blocked[:0]
	i.stash = append(units, i.stash...)
}

// snapshotAt takes the instance's snapshot for checkpoint id, forwards the
// barrier and reports to the checkpointer (triggered: on the trigger, not
// on barriers).
func (i *instance) snapshotAt(id uint64, triggered bool) {
	in := &i.ins
	in.last = id
	in.aligning, in.arrived = 0, nil
	i.log.Debug("snapshot", "checkpoint", id, "triggered", triggered, "blocked", len(in.blocked))
	err := i.prepareCheckpoint(id)
	if n := i.out.Emit(flow.Control{Kind: flow.Barrier, Checkpoint: id}, i.outputs); n > 0 {
		i.node.system.Root.Send(i.node.ckpt, ckpt.Lost{ID: id,
			Reason: fmt.Sprintf("operator %s: %d output(s) changing layout (an instance moved) did not take barrier %d", i.key, n, id)})
	}
	i.send(false)
	i.node.system.Root.Send(i.node.ckpt, ckpt.Snapped{ID: id, Key: i.key.ckKey(), Err: err, Triggered: triggered,
		Groups: checkpoint.Groups{Operator: i.key.op, Epoch: i.key.epoch, Index: i.key.index, First: i.lo, End: i.hi}})
	i.releaseBlocked()
	i.drain()
}

// prepareCheckpoint pre-commits a Committer and commits the state written
// before the barrier, then holds further commits until the node's copy is
// taken.
func (i *instance) prepareCheckpoint(id uint64) error {
	if i.failed || i.mode != modeActive {
		i.ck.hold = id
		return nil // nothing of a failed instance's is committed after its failure
	}
	if n := i.out.Unread(); n > 0 {
		// They are in no snapshot, and the source's position in this one
		// would be past them: the checkpoint cannot be taken.
		return fmt.Errorf("operator %s holds %d records of a stream no operator reads; deploy its reader", i.key, n)
	}
	if c, ok := i.opv.(core.Committer); ok {
		i.begin(i.lo, i.at.event)
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return c.PreCommit(i.octx, id)
		}()
		if err != nil {
			i.store.Rollback()
			i.out.Rollback()
			i.setLastError(fmt.Sprintf("checkpoint %d: pre-commit: %v", id, err))
			return fmt.Errorf("operator %s: pre-commit: %w", i.key, err)
		}
		i.end()
	}
	i.ck.hold = 0
	// Without waiting for fsync: the node's copy, which makes this state
	// part of the checkpoint, flushes it to table files and syncs them;
	// before the copy, a crash rolls back to an older checkpoint anyway.
	// Waiting here would delay the barrier by an fsync at every stage.
	i.commit(false)
	if err := i.commitErr; err != nil {
		return fmt.Errorf("operator %s: commit state: %w", i.key, err)
	}
	i.ck.hold = id
	return nil
}

// onCheckpointTaken lifts the hold of checkpoint id.
func (i *instance) onCheckpointTaken(id uint64) {
	if i.ck.hold != 0 && i.ck.hold <= id {
		i.ck.hold = 0
	}
}

// onCheckpointComplete commits a Committer's work of checkpoint id.
func (i *instance) onCheckpointComplete(id uint64) {
	i.onCheckpointTaken(id)
	if i.mode != modeActive || i.failed {
		return
	}
	i.commitSink(id)
}

// commitSink calls Committer.Commit for checkpoint id, if the operator is
// one; a failure is logged and retried at the next completion.
func (i *instance) commitSink(id uint64) {
	c, ok := i.opv.(core.Committer)
	if !ok {
		return
	}
	i.begin(i.lo, i.at.event)
	start := time.Now()
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return c.Commit(i.octx, id)
	}()
	if err != nil {
		i.store.Rollback()
		i.out.Rollback()
		i.log.Error("sink commit failed; retried at the next checkpoint", "checkpoint", id, "error", err)
		i.setLastError(fmt.Sprintf("checkpoint %d: commit: %v", id, err))
		return
	}
	i.end()
	i.log.Debug("sink committed", "checkpoint", id, "took", time.Since(start))
}

// onCheckpointAbort drops what the instance holds for checkpoint id. Its
// barriers still on their way are stale from now on: one arriving later
// must not start an alignment that holds input for a checkpoint nobody
// waits for (until a newer checkpoint's barriers overtake it).
func (i *instance) onCheckpointAbort(id uint64) {
	if i.ins.aligning != 0 && i.ins.aligning <= id {
		i.log.Debug("checkpoint alignment abandoned", "checkpoint", i.ins.aligning, "aborted", id)
		i.abandonAlignment()
		i.drain()
	}
	i.ins.last = max(i.ins.last, id)
	i.onCheckpointTaken(id)
}

// onTrigger snapshots an instance with no upstream barrier to wait for;
// the others snapshot when barrier id has come on every input edge.
func (i *instance) onTrigger(id uint64) {
	i.ins.refresh(i.node.topology(), i.spec)
	if id <= i.ins.last {
		return
	}
	if !i.ins.needsTrigger() {
		i.ins.triggered = max(i.ins.triggered, id)
		return
	}
	if i.mode != modeActive {
		i.node.system.Root.Send(i.node.ckpt, ckpt.Snapped{ID: id, Key: i.key.ckKey(), Err: fmt.Errorf("instance %s is %s", i.key, i.stateName()), Triggered: true})
		return
	}
	i.snapshotAt(id, true)
}

// advanceWatermark recomputes the instance's watermark from its upstreams
// and, when it moved, fires the event-time timers due and forwards it
// (end-of-stream once every upstream ended; idleness when every live one
// is idle). See eventtime.go.
func (i *instance) advanceWatermark() {
	wm, ended := i.ins.watermark()
	if ended {
		i.inputEnded = true
		wm = endOfTime
	}
	i.raiseWatermark(wm)
}

// precommitForMove pre-commits a Committer whose instance moves to another
// node: what it wrote since the last barrier becomes part of its state,
// which moves with it, and the next checkpoint to complete commits it
// there (the id is one past the last barrier seen, so that any later
// checkpoint's Commit covers it). If a crash rolls back to an earlier
// checkpoint instead, the restored sink discards it and the records are
// replayed.
func (i *instance) precommitForMove() {
	c, ok := i.opv.(core.Committer)
	if !ok || i.failed {
		return
	}
	i.begin(i.lo, i.at.event)
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return c.PreCommit(i.octx, i.ins.last+1)
	}()
	if err != nil {
		i.store.Rollback()
		i.out.Rollback()
		i.log.Error("pre-commit before moving failed; its records are replayed after the next rollback", "error", err)
		return
	}
	i.end()
}
