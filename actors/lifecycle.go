package actors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/actors/ckpt"
	"github.com/sluicehq/sluice/actors/handoff"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/persistence"
)

// saveCounters stores the processed and produced counters, when they
// changed, with the instance's state (in its first key group) before a
// commit, so that they move with the instance: an instance that moved to
// another node reports what it did over its whole life, not only since it
// arrived.
func (i *instance) saveCounters() {
	if i.mode != modeActive {
		return
	}
	if n := i.pub.processed.Load(); n != i.processedSet {
		i.store.SetMeta(i.lo, metaProcessed, binary.BigEndian.AppendUint64(nil, uint64(n)))
		i.processedSet = n
	}
	if i.produced != i.producedSet {
		i.store.SetMeta(i.lo, metaProduced, binary.BigEndian.AppendUint64(nil, uint64(i.produced)))
		i.producedSet = i.produced
	}
}

// commit writes the instance's state, unless a checkpoint holds commits
// (see checkpointing.go). The state is in Pebble when it returns.
func (i *instance) commit(sync bool) { i.commitState(sync, false) }

// commitState is commit; with background, the periodic commit, Pebble
// applies the batch (and syncs the WAL) off the instance's goroutine where
// nothing waits for the commit to be durable: without a guarantee, and
// under exactly-once, where a checkpoint's own commit (prepareCheckpoint)
// is synchronous and waits for this one. At-least-once and the state log
// take a durability point right after the commit, so they wait for it.
func (i *instance) commitState(sync, background bool) {
	if i.ck.hold != 0 {
		return
	}
	i.saveCounters()
	i.saveWatermark()
	flushed := i.flushOperator()
	var err error
	switch {
	case i.node.cfg.StateLog != nil:
		err = i.store.CommitLogged(sync, &i.logBacklog)
	case background && !i.node.cfg.AtLeastOnce:
		err = i.store.CommitAsync(sync)
	default:
		err = i.store.Commit(sync)
	}
	repeated := errors.Is(err, persistence.ErrFailed) && errors.Is(i.commitErr, persistence.ErrFailed)
	i.commitErr = err
	if err != nil {
		if !repeated { // a failed database is reported by the node's health, once
			i.log.Error("state commit failed; will retry", "error", err, "pending", i.store.Pending())
		}
		i.setLastError(err.Error())
		return
	}
	logged := i.appendLog()
	if flushed && logged && i.node.cfg.AtLeastOnce {
		i.snapshot()
	}
}

// activate makes an awaiting instance active: its state is in place, so
// load its timers, create and Init its operator, process what was stashed
// and start polling.
func (i *instance) activate() {
	if i.mode != modeAwaiting {
		return
	}
	i.mode = modeActive
	i.store.DropCache()
	stored, err := i.store.Timers(i.lo, i.hi)
	if err != nil {
		i.log.Error("loading timers failed", "error", err)
		i.setLastError(err.Error())
	}
	i.timers = newTimerQueue()
	for _, t := range stored {
		i.timers.set(t.Group, t.Key, t.At)
	}
	i.loadEventTime()
	// The counters are the stored ones, or zero when the state holds none
	// (a rollback to a checkpoint taken before the first commit, or to no
	// checkpoint): never what this value counted before a rollback.
	var processed, produced int64
	if v, ok, err := i.store.GetMeta(i.lo, metaProcessed); err == nil && ok && len(v) == 8 {
		processed = int64(binary.BigEndian.Uint64(v))
	}
	if v, ok, err := i.store.GetMeta(i.lo, metaProduced); err == nil && ok && len(v) == 8 {
		produced = int64(binary.BigEndian.Uint64(v))
	}
	i.pub.processed.Store(processed)
	i.processedSet = processed
	i.produced, i.producedSet = produced, produced
	i.pub.produced.Store(produced)
	i.node.event(i.key, status.EventActive)
	i.startIncarnation()
}

// startIncarnation creates the Operator, Inits it, resumes the item a failed
// incarnation left, and takes up stashed input and polling.
func (i *instance) startIncarnation() {
	i.opv = i.op.factory()
	if !i.isFailed() {
		if err := core.CheckGuarantee(i.opv, i.node.guarantee()); err != nil {
			// Deployed elsewhere, by a node that does not host the kind:
			// restarting would not help.
			i.markFailed(err.Error())
		}
	}
	i.failed = i.isFailed()
	if !i.failed {
		i.begin(i.lo, time.Now())
		i.initing = true
		func() {
			defer i.recoverAttempt()
			if err := i.opv.Init(i.octx); err != nil {
				i.cur.lastErr = "init: " + err.Error()
				panic(&failure{err: fmt.Errorf("init: %w", err)})
			}
		}()
		i.initing = false
		i.end()
	}
	i.setState(status.StateRunning)
	switch i.cur.kind {
	case workRecord:
		i.runBatch(i.cur.batch, i.cur.idx, i.cur.attempts, i.cur.lastErr)
	case workTimer, workEventTimer:
		i.runTimer()
		i.cur = work{}
	case workPoll:
		i.cur = work{}
	}
	if _, ok := i.opv.(core.Source); ok && !i.failed {
		i.schedulePoll(i.pollIdle)
	}
	i.settle()
	i.drain()
}

// release stops the instance here: it commits its state, stops timers and
// polling, and from now on bounces its input to the producers. Output it
// still holds keeps being delivered. The coordinator is told when done.
func (i *instance) release() {
	if i.mode == modeActive {
		if i.ck.hold != 0 {
			// A move abandons the checkpoint in progress: the state must
			// go along. Told before the commit below, the checkpointer
			// fails its part even if it copies the database after it.
			i.node.system.Root.Send(i.node.ckpt, ckpt.Moved{ID: i.ck.hold, Key: i.key.ckKey()})
			i.ck.hold = 0
		}
		if i.exactlyOnce() {
			i.precommitForMove()
		}
		i.commit(true) // flushes and snapshots with the operator still there
		i.closeOperator()
		i.opv = nil
		i.timers.stop()
		i.timers = newTimerQueue()
		i.resetEventTime()
		if i.pollTimer != nil {
			i.pollTimer.Stop()
		}
		i.pollQueued = false
		i.node.event(i.key, status.EventReleased)
	}
	i.mode = modeReleased
	i.store.DropCache()
	for _, u := range i.stash {
		if u.kind == unitBatch {
			i.bounceBack(u.batch)
		}
	}
	i.stash = nil
	for _, b := range i.ins.blocked {
		i.bounceBack(b) // held for a barrier: not processed here either
	}
	i.ins = inputs{}
	i.setBlocked(false)
	i.setState(status.StateReleased)
	i.releaseReported = false
	i.settle()
	i.reportReleased()
}

// reportReleased tells the coordinator that the instance is released, which
// lets the new owner start: at once, or under exactly-once once everything
// the instance produced here has been acknowledged. The new owner's
// barriers would otherwise overtake this one's last records: receivers
// track barriers per upstream instance, and would count those records as
// after a checkpoint whose source positions are past them.
func (i *instance) reportReleased() {
	if i.mode != modeReleased || i.releaseReported {
		return
	}
	if i.exactlyOnce() && (i.out.Pending() || i.out.Inflight() > 0) {
		return // settle calls again as acks come back
	}
	i.releaseReported = true
	i.node.system.Root.Send(i.node.coord, handoff.Released{Key: i.key.ckKey()})
}

// onRestarting undoes the failed attempt and commits what earlier attempts
// wrote, so that the next incarnation starts from state in Pebble. Then,
// with the restart counted, the output of those attempts leaves: the
// flushMsg that settle queued for it may wait in the mailbox behind
// batches that fail in turn, each retried with a growing backoff.
func (i *instance) onRestarting() {
	i.pub.busyTime.set(false) // a failed attempt outside handle (drain's event-time timers) left its spell open
	i.store.Rollback()
	i.out.Rollback()
	i.at.timerOps = i.at.timerOps[:0]
	i.at.etOps = i.at.etOps[:0]
	i.closeOperator()
	i.commit(true)
	i.store.DropCache()
	i.mu.Lock()
	i.restarts++
	if i.state != status.StateFailed {
		i.state = status.StateRestarting
	}
	i.mu.Unlock()
	if obs := i.node.cfg.Observer; obs != nil {
		obs.Restarted(i.key.op, i.key.index)
	}
	i.send(true)
}

// onStopping closes the operator and commits its state. As before every
// commit, a Flusher is flushed first (Flusher's contract), so that what it
// wrote since the last periodic commit is durable with the state: a Kafka
// source under CommitProduced commits its offsets to the group there.
// Under exactly-once the last completed checkpoint governs what a restart
// keeps, and a Committer's open transaction is left to it.
func (i *instance) onStopping() {
	i.cancel()
	if i.pollTimer != nil {
		i.pollTimer.Stop()
	}
	i.timers.stop()
	var err error
	if i.mode == modeActive {
		if !i.exactlyOnce() {
			i.flushOperator()
		}
		i.closeOperator()
		i.saveCounters()
		i.saveWatermark()
		err = i.store.Commit(true)
		i.node.event(i.key, status.EventStopped)
	}
	i.mu.Lock()
	i.closeErrV = err
	if i.state != status.StateFailed {
		i.state = status.StateStopped
	}
	i.mu.Unlock()
}

// closeOperator calls Close on the current Operator if it has one.
func (i *instance) closeOperator() {
	c, ok := i.opv.(core.Closer)
	if !ok {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			i.log.Error("operator Close panicked", "panic", fmt.Sprint(r))
		}
	}()
	if err := c.Close(i.octx); err != nil {
		i.log.Warn("operator Close failed", "error", err)
	}
}

// noteFailure is called by the supervisor for each failure.
func (i *instance) noteFailure(reason any) { i.setLastError(fmt.Sprint(reason)) }

// markFailed is called by the supervisor when the restart policy is
// exhausted; the next incarnation dead-letters its input.
func (i *instance) markFailed(reason string) {
	i.mu.Lock()
	i.state = status.StateFailed
	i.failedReason = status.ClipText(reason, status.ErrorTextMax)
	i.mu.Unlock()
	i.log.Error("operator instance failed: restart policy exhausted; its input now goes to the dead-letter stream", "reason", reason)
}

// isFailed reports whether the supervisor marked the instance failed.
func (i *instance) isFailed() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.state == status.StateFailed
}

func (i *instance) failedReasonSnapshot() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.failedReason
}

func (i *instance) setLastError(s string) {
	i.mu.Lock()
	i.lastError = status.ClipText(s, status.ErrorTextMax)
	i.mu.Unlock()
}

func (i *instance) setState(s status.InstanceState) {
	i.mu.Lock()
	if i.state != status.StateFailed {
		i.state = s
	}
	i.mu.Unlock()
}

func (i *instance) closeErr() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.closeErrV
}
