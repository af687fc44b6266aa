package actors

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sluicehq/sluice/actors/ckpt"
	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/internal/core"
)

// An instance's event time.
//
// Its watermark (instance.watermark, ns) is the minimum over its input
// edges of the watermarks received (inputs.go), or, for a source, what its
// watermark strategy derived from the event times it produced
// (sourcewm.go); once every input ended (or the source finished) it is the
// end of time. When it moves, the event-time timers due at it fire, in due
// order, each on the key group it was set in; then the watermark (or
// end-of-stream) is forwarded on every output edge, after the timers'
// output. If the output fills up while timers fire (backpressure), the
// rest fire when it drains (etDue), before any further input is taken.
//
// Event-time timers are stored with the state in their own key space
// (persistence.ClassEventTimer), so they move, roll back and restore with
// their key groups like processing-time timers; the watermark is stored in
// every owned key group (metaWatermark), so that an instance resuming
// after a restart, rescale or handoff starts from the smallest watermark
// its key groups had, never from before it.

// metaWatermark names the stored watermark (8 bytes, big-endian ns), kept
// in every key group of the instance.
const metaWatermark = "watermark"

// endOfTime is the watermark of an instance whose inputs all ended.
const endOfTime = math.MaxInt64

// fireEventTimers runs the event-time timers due at the watermark while
// output has room, then forwards the watermark (or end-of-stream). A
// failed instance fires none but still forwards.
func (i *instance) fireEventTimers() {
	for i.etDue && !i.blocked && i.mode == modeActive {
		if i.failed {
			i.etDue = false
			break
		}
		t, ok := i.etimers.popDue(wmTime(i.watermark))
		if !ok {
			i.etDue = false
			break
		}
		i.cur = work{kind: workEventTimer, timer: t}
		i.runTimer()
		i.cur = work{}
		i.blocked = i.out.Flush(false)
	}
	if !i.etDue && i.mode == modeActive {
		i.forwardWatermark()
	}
}

// callEventTimer runs ProcessEventTimer like callRecord.
func (i *instance) callEventTimer(t timerItem) {
	defer i.recoverAttempt()
	p, ok := i.opv.(core.EventTimerProcessor)
	if !ok {
		// Set by an earlier version of the operator's code.
		i.fail(fmt.Errorf("operator %q: event-time timer %q is due: %w", i.key.op, t.key, core.ErrNotEventTimerProcessor))
	}
	if err := p.ProcessEventTimer(i.octx, t.key, t.at); err != nil {
		i.fail(err)
	}
}

// noteEventTimersDue marks the event-time timers due when the earliest is
// at or before the watermark (after a timer was set in the past, or the
// timers were loaded).
func (i *instance) noteEventTimersDue() {
	if t, ok := i.etimers.peek(); ok && t.at.UnixNano() <= i.watermark {
		i.etDue = true
	}
}

// raiseWatermark moves the instance's watermark to wm, when later, and
// fires the timers due at it (which forwards it).
func (i *instance) raiseWatermark(wm int64) {
	if wm != noWatermark && wm > i.watermark {
		i.watermark = wm
		i.pub.watermark.Store(wm)
		i.etDue = true
	}
	i.fireEventTimers()
}

// forwardWatermark sends the instance's watermark on its outputs when it
// moved since the last one sent, end-of-stream once its inputs all ended
// (the instance is then finished), or idleness when every live input is
// idle (an idle instance must not hold its readers back).
func (i *instance) forwardWatermark() {
	if i.inputEnded {
		if !i.pub.finished.Load() {
			i.pub.finished.Store(true)
			i.out.Emit(flow.Control{Kind: flow.EndOfStream}, i.outputs)
			i.send(false)
			i.log.Info("input ended: end-of-stream forwarded; instance finished")
		}
		return
	}
	idle := i.idleNow()
	switch {
	case idle && !i.idleSent:
		i.idleSent = true
		i.out.Emit(flow.Control{Kind: flow.Watermark, Watermark: wmTime(i.watermark), Idle: true}, i.outputs)
		i.send(false)
	case !idle && i.watermark != noWatermark && (i.watermark > i.wmSent || i.idleSent):
		i.idleSent = false
		i.wmSent = i.watermark
		i.out.Emit(flow.Control{Kind: flow.Watermark, Watermark: wmTime(i.watermark)}, i.outputs)
		i.send(false)
	}
}

// loadEventTime loads the instance's event-time timers and stored
// watermark (on activation).
func (i *instance) loadEventTime() {
	i.etimers = newTimerQueue()
	stored, err := i.store.EventTimers(i.lo, i.hi)
	if err != nil {
		i.log.Error("loading event-time timers failed", "error", err)
		i.setLastError(err.Error())
	}
	for _, t := range stored {
		i.etimers.set(t.Group, t.Key, t.At)
	}
	wm := int64(endOfTime)
	for kg := i.lo; kg < i.hi && wm != noWatermark; kg++ {
		v, ok, err := i.store.GetMeta(kg, metaWatermark)
		if err != nil || !ok || len(v) != 8 {
			wm = noWatermark // a key group that never had one
			break
		}
		wm = min(wm, int64(binary.BigEndian.Uint64(v)))
	}
	if wm == endOfTime {
		wm = noWatermark
	}
	i.watermark = max(i.watermark, wm)
	i.pub.watermark.Store(i.watermark)
	i.watermarkSet, i.wmSent = wm, noWatermark
	i.loadSourceWatermark()
	// Forward the watermark again (a reader that moved too starts from
	// nothing) once the timers due at it fired.
	i.etDue = i.watermark != noWatermark

}

// saveWatermark stores the watermark in every owned key group when it
// moved since last stored (before a commit). The end of time is not
// stored: a later run of a bounded stream starts from the last real
// watermark.
func (i *instance) saveWatermark() {
	if i.mode != modeActive {
		return
	}
	i.saveSourceWatermark()
	if i.watermark == i.watermarkSet || i.watermark == noWatermark || i.watermark == endOfTime {
		return
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(i.watermark))
	for kg := i.lo; kg < i.hi; kg++ {
		i.store.SetMeta(kg, metaWatermark, v)
	}
	i.watermarkSet = i.watermark
}

// resetEventTime forgets the in-memory event time (a rollback or a
// release); activation loads it again from the state.
func (i *instance) resetEventTime() {
	i.etimers = newTimerQueue()
	i.at.etOps = i.at.etOps[:0]
	i.etDue = false
	i.watermark, i.watermarkSet, i.wmSent = noWatermark, noWatermark, noWatermark
	i.pub.watermark.Store(noWatermark)
	i.inputEnded, i.idleSent = false, false
	i.pub.finished.Store(false)
	i.src = sourceWM{}
}

// Finished reports whether the bounded streams of an embedded node (which
// runs every instance) are done: at least one source is deployed, every
// instance of every source finished (its Poll returned
// core.ErrEndOfStream), every instance of every operator reading from
// operators finished too (its inputs all ended, its event-time timers
// fired), and nothing is queued or in flight. Operators fed only from
// outside (Runtime.Produce) do not count. It asks every instance (see
// busy) only when the cheap checks pass.
func (n *Node) Finished(ctx context.Context) bool {
	topo := n.topology()
	finished := make(map[string]int) // operator → finished instances of its epoch
	for _, inst := range n.instances() {
		if spec, ok := topo.Find(inst.key.op); ok && spec.Epoch == inst.key.epoch && inst.pub.finished.Load() {
			finished[inst.key.op]++
		}
	}
	sources := 0
	for _, spec := range topo.Operators {
		if len(spec.Meta.Inputs) == 0 {
			sources++
		} else if len(upstreamsOf(topo, spec)) == 0 {
			continue // fed only from outside
		}
		if finished[spec.Meta.Name] < spec.Meta.Parallelism {
			return false
		}
	}
	return sources > 0 && n.queued.Load() == 0 && n.quiescent(ctx)
}

// commitSinks makes every local instance commit its sink's output for the
// complete checkpoint id (Committer.Commit is idempotent) and waits until
// each has: the final checkpoint of a stop, whose own completion message
// could otherwise reach the instances after they stopped. A finished
// bounded stream's output is then visible when Run returns.
func (n *Node) commitSinks(ctx context.Context, id uint64) error {
	insts := n.instances()
	dones := make([]chan struct{}, len(insts))
	for k, inst := range insts {
		dones[k] = make(chan struct{})
		n.system.Root.Send(inst.pid, ckpt.Complete{ID: id, Done: dones[k]})
	}
	for k, done := range dones {
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("commit sinks of checkpoint %d: %s: %w", id, insts[k].key, ctx.Err())
		}
	}
	return nil
}
