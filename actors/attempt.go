package actors

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/placement"
)

// runBatch processes m's records from index from; attempts and lastErr
// describe the failed attempts already made on that first record.
func (i *instance) runBatch(m *batchMsg, from, attempts int, lastErr string) {
	routing := m.Routing
	kgs := i.spec.Meta.KeyGroups
	if from == 0 && len(m.Records) < status.ProcessedSampleEvery/4 && i.node.cfg.Observer != nil {
		i.sampleN = max(i.sampleN, status.ProcessedSampleEvery-1) // a small batch: time its first record
	}
	for j := from; j < len(m.Records); j++ {
		i.cur = work{kind: workRecord, batch: m, idx: j, from: from, attempts: attempts, lastErr: lastErr}
		attempts, lastErr = 0, ""
		rec := m.Records[j]
		rec.Stream = m.Stream
		if i.failed {
			i.deadLetter(rec, m.Stream, "instance failed: "+i.failedReasonSnapshot(), 0)
		} else if i.cur.attempts >= i.spec.Meta.Restart.DeadLetterAfter {
			i.deadLetter(rec, m.Stream, i.cur.lastErr, i.cur.attempts)
			i.park(i.cur.attempts)
		} else {
			kg := i.lo
			if routing == core.GroupBy {
				kg = placement.KeyGroup(rec.Key, kgs)
			}
			i.begin(kg, rec.EventTime)
			i.cur.attempts++
			if obs := i.node.cfg.Observer; obs != nil && i.observed(&rec) {
				i.observeRecord(obs, &rec, m)
			} else {
				i.callRecord(rec)
			}
			if err := i.rejected; err != nil {
				i.rejected = nil
				i.reject(rec, m.Stream, err)
			} else {
				i.end()
				i.succeeded()
			}
		}
		i.setBlocked(i.out.Flush(false)) // full buffers leave at once (see send)
	}
	i.cur = work{}
	if i.node.cfg.AtLeastOnce {
		i.dur.processed(m)
	}
	i.pub.processed.Add(int64(len(m.Records) - from))
	dequeued(i.node, m)
	i.node.replyAck(m.From, m.Slot)
	if m.Control != nil {
		i.onControl(m)
	}
	flow.Recycle(m.Records) // nothing keeps a batch's records once processed
	m.Records = nil
}

// dequeued takes batch m, processed or bounced, off the queued counters
// that its delivery increased: the node's and, when one counted it, the
// destination instance's.
func dequeued(n *Node, m *batchMsg) {
	n.queued.Add(-int64(len(m.Records)))
	if m.counted != nil {
		m.counted.pub.queued.Add(-int64(len(m.Records)))
		m.counted = nil
	}
}

// observed counts a record towards the next timed one and reports whether
// the status.Observer sees it: it is traced, or it is timed (one in
// status.ProcessedSampleEvery, or the first of a small batch). The others, nearly
// all, go straight to callRecord without a call to observeRecord, whose
// frame is large.
func (i *instance) observed(rec *core.Record) bool {
	i.sampleN++
	return i.sampleN >= status.ProcessedSampleEvery || traceOf(rec) != ""
}

// observeRecord runs callRecord, for a record observed says is seen, with
// a span if it is traced and a timing if it is timed.
func (i *instance) observeRecord(obs status.Observer, rec *core.Record, m *batchMsg) {
	tp := traceOf(rec)
	timed := i.sampleN >= status.ProcessedSampleEvery
	start := time.Now()
	if tp != "" {
		var wait time.Duration
		if !m.Sent.IsZero() {
			wait = start.Sub(m.Sent)
		}
		i.at.trace, i.at.end = obs.StartSpan(status.SpanInfo{Parent: tp, Operator: i.key.op, Instance: i.key.index, Node: i.node.cfg.NodeID,
			Stream: m.Stream, QueueWait: wait, Start: start})
	}
	i.callRecord(*rec)
	if i.at.end != nil {
		i.at.end(nil)
		i.at.trace, i.at.end = "", nil
	}
	if timed {
		i.sampleN = 0
		i.observeStages(obs, rec, m, start)
		done := time.Now()
		var since time.Duration
		if !rec.EventTime.IsZero() {
			since = done.Sub(rec.EventTime)
		}
		obs.Processed(i.key.op, i.key.index, done.Sub(start), since)
	}
}

// sampleBlock is how many of its records a source instance reserves at a
// time for sampling decisions (status.Observer.Sample). Reserved records an
// instance does not produce (it stopped, or moved) are never sampled, so
// fewer than one in N of an operator's records may start a trace, by at
// most sampleBlock per instance stopped.
const sampleBlock = 64

// sampleSource reports whether the record a source instance produces now
// starts a trace, reserving records from obs sampleBlock at a time.
func (i *instance) sampleSource(obs status.Observer) bool {
	if i.smpLeft == 0 {
		first, every := obs.Sample(i.key.op, sampleBlock)
		i.smpLeft, i.smpNext, i.smpEvery = sampleBlock, first, every
		if every == 0 {
			i.smpNext = sampleBlock // none
		}
	}
	pos := sampleBlock - i.smpLeft
	i.smpLeft--
	if pos != i.smpNext {
		return false
	}
	i.smpNext += i.smpEvery
	return true
}

// begin starts an attempt in key group kg.
func (i *instance) begin(kg int, event time.Time) {
	i.at.group = kg
	i.at.event = event
	i.store.Begin()
	i.out.Begin()
	i.at.timerOps = i.at.timerOps[:0]
	i.at.etOps = i.at.etOps[:0]
}

// end completes a successful attempt.
func (i *instance) end() {
	i.timers.apply(i.at.timerOps)
	i.at.timerOps = i.at.timerOps[:0]
	if len(i.at.etOps) > 0 {
		i.etimers.apply(i.at.etOps)
		i.at.etOps = i.at.etOps[:0]
		i.noteEventTimersDue()
	}
	i.store.Begin()
}

// callRecord runs ProcessRecord, turning an error or panic into a failure
// for the supervisor.
func (i *instance) callRecord(rec core.Record) {
	defer i.recoverAttempt()
	if err := i.opv.ProcessRecord(i.octx, rec); err != nil {
		if errors.Is(err, core.ErrBadRecord) {
			i.rejected = err // runBatch dead-letters it: no retry cures it
			return
		}
		i.fail(err)
	}
}

// reject undoes the attempt on rec, which its operator refused as bad
// (core.ErrBadRecord), and sends rec to the dead-letter stream at once:
// no restart, no retry, no strike against the instance.
func (i *instance) reject(rec core.Record, stream string, err error) {
	i.store.Rollback()
	i.out.Rollback()
	i.at.timerOps = i.at.timerOps[:0]
	i.at.etOps = i.at.etOps[:0]
	i.store.Begin()
	reason := status.ClipText(err.Error(), status.ErrorTextMax)
	i.setLastError(reason)
	i.deadLetter(rec, stream, reason, i.cur.attempts)
}

// callTimer runs ProcessTimer like callRecord.
func (i *instance) callTimer(t timerItem) {
	defer i.recoverAttempt()
	if err := i.opv.ProcessTimer(i.octx, t.key, t.at); err != nil {
		i.fail(err)
	}
}

// callPoll runs Poll like callRecord, except that an error wrapping
// core.ErrTransient is recorded (and polling backs off) rather than a
// failure, and one wrapping core.ErrEndOfStream ends the source (what the
// Poll produced is kept). It reports whether Poll failed transiently or
// ended the stream. A WatermarkGenerator is asked for its watermark in the
// same attempt.
func (i *instance) callPoll(src core.Source) (transient, ended bool) {
	defer i.recoverAttempt()
	err := src.Poll(i.octx)
	if err != nil && errors.Is(err, core.ErrEndOfStream) {
		i.log.Info("source finished (end of stream)", "reason", err)
		return false, true
	}
	if err == nil {
		i.generateWatermark()
	}
	if err != nil && errors.Is(err, core.ErrTransient) {
		i.pub.transient.Add(1)
		i.setLastError(err.Error())
		if now := time.Now(); now.After(i.dlNextLog) {
			i.dlNextLog = now.Add(time.Second)
			i.log.Warn("source failed; will retry", "error", err)
		}
		return true, false
	}
	if err != nil {
		i.fail(err)
	}
	return false, false
}

// fail records err as the current attempt's failure and hands it to the
// supervisor.
func (i *instance) fail(err error) {
	i.cur.lastErr = status.ClipText(err.Error(), status.ErrorTextMax)
	panic(&failure{err: err})
}

// recoverAttempt records a panic's value and stack, then re-panics so that
// protoactor's mailbox escalates the failure to the supervisor.
func (i *instance) recoverAttempt() {
	r := recover()
	if r == nil {
		return
	}
	f, ok := r.(*failure)
	if !ok {
		f = &failure{value: r, stack: debug.Stack()}
		i.cur.lastErr = status.ClipText("panic: "+fmt.Sprint(r), status.ErrorTextMax)
	}
	i.setLastError(i.cur.lastErr)
	i.failedAttempt()
	if i.cur.kind == workRecord && !i.initing {
		// The records before the failing one are done, and their writes
		// are committed before the restart; the next incarnation takes
		// the batch up at the failing record and counts from there.
		i.pub.processed.Add(int64(i.cur.idx - i.cur.from))
	}
	i.initing = false
	if i.at.end != nil {
		i.at.end(f)
		i.at.trace, i.at.end = "", nil
	}
	if f.stack != nil {
		i.log.Error("operator panicked", "error", i.cur.lastErr, "attempt", i.cur.attempts, "stack", string(f.stack))
	} else {
		i.log.Warn("operator returned an error", "error", i.cur.lastErr, "attempt", i.cur.attempts)
	}
	panic(f)
}

// poll calls a source's Poll and schedules the next call.
func (i *instance) poll() {
	src, ok := i.opv.(core.Source)
	if !ok || i.failed || i.node.isStopping() || i.inputEnded {
		return
	}
	before := i.produced
	i.cur = work{kind: workPoll}
	i.src.pollMax, i.src.generated = noWatermark, time.Time{}
	i.begin(i.lo, time.Now())
	transient, ended := i.callPoll(src)
	i.end()
	i.cur = work{}
	if !transient {
		i.afterPoll(i.produced > before, ended)
	}
	if ended {
		return // polled no more
	}
	if transient {
		i.pollIdle = min(max(2*i.pollIdle, 50*time.Millisecond), 2*time.Second)
		i.schedulePoll(i.pollIdle)
		return
	}
	i.succeeded()
	if i.produced > before {
		i.pollIdle = 0
		i.schedulePoll(0)
		return
	}
	i.pollIdle = min(max(2*i.pollIdle, time.Millisecond), 100*time.Millisecond)
	i.schedulePoll(i.pollIdle)
}

// schedulePoll queues a pollMsg after d (at once when d is 0).
func (i *instance) schedulePoll(d time.Duration) {
	if i.pollQueued {
		return
	}
	i.pollQueued = true
	if d == 0 {
		i.node.system.Root.Send(i.pid, pollMsg{})
		return
	}
	if i.pollTimer == nil {
		pid, root := i.pid, i.node.system.Root
		i.pollTimer = time.AfterFunc(d, func() { root.Send(pid, pollMsg{}) })
		return
	}
	i.pollTimer.Reset(d)
}

// fireTimers runs every timer that is due, stopping early when blocked.
func (i *instance) fireTimers() {
	i.timers.fired()
	if i.failed {
		return
	}
	now := time.Now()
	for !i.blocked {
		t, ok := i.timers.popDue(now)
		if !ok {
			break
		}
		i.cur = work{kind: workTimer, timer: t}
		i.runTimer()
		i.cur = work{}
		i.setBlocked(i.out.Flush(false))
	}
}

// runTimer attempts (or dead-letters) the timer in i.cur: a
// processing-time one, or an event-time one (workEventTimer).
func (i *instance) runTimer() {
	t := i.cur.timer
	event := i.cur.kind == workEventTimer
	remove, stream := i.store.DeleteTimer, "timer"
	if event {
		remove, stream = i.store.DeleteEventTimer, "event-timer"
	}
	if i.cur.attempts >= i.spec.Meta.Restart.DeadLetterAfter {
		i.deadLetter(core.Record{Key: []byte(t.key), EventTime: t.at}, stream, i.cur.lastErr, i.cur.attempts)
		i.park(i.cur.attempts)
		remove(t.group, t.key)
		return
	}
	i.begin(t.group, t.at)
	i.cur.attempts++
	if event {
		i.callEventTimer(t)
	} else {
		i.callTimer(t)
	}
	// The timer may have set itself again (in the attempt's ops).
	ops := i.at.timerOps
	if event {
		ops = i.at.etOps
	}
	if !timerSetDuring(ops, t.group, t.key) {
		remove(t.group, t.key)
	}
	i.end()
	i.succeeded()
}

// scheduleTimers arms the wake-up for the earliest timer.
func (i *instance) scheduleTimers() {
	if i.mode != modeActive || i.failed {
		return
	}
	pid, root := i.pid, i.node.system.Root
	i.timers.arm(func() { root.Send(pid, timerMsg{}) })
}

// deadLetter sends rec to the operator's dead-letter stream with the reason.
func (i *instance) deadLetter(rec core.Record, stream, reason string, attempts int) {
	name := i.key.op
	runtime := []core.Header{
		{Key: core.HeaderError, Value: status.ClipText(reason, status.ErrorTextMax)},
		{Key: core.HeaderAttempts, Value: strconv.Itoa(attempts)},
		{Key: core.HeaderOperator, Value: name},
		{Key: core.HeaderInstance, Value: strconv.Itoa(i.key.index)},
		{Key: core.HeaderStream, Value: stream},
	}
	dl := rec
	dl.Headers = append(append([]core.Header(nil), rec.Headers...), runtime...)
	i.out.Begin()
	i.out.Produce(core.DeadLetterStream(name), dl)
	i.pub.deadLetters.Add(1)
	i.node.dlLog.Add(name, i.node.cfg.NodeID, i.key.index, rec, runtime)
	if obs := i.node.cfg.Observer; obs != nil {
		obs.DeadLettered(name, i.key.index)
	}
	// Log the first dead letter, then at most one line a second with the
	// number of dead letters since the last line.
	i.dlUnlogged++
	if now := time.Now(); now.After(i.dlNextLog) {
		i.dlNextLog = now.Add(time.Second)
		i.log.Warn("record sent to dead-letter stream", "key", string(rec.Key), "stream", stream, "attempts", attempts,
			"error", reason, "dead_letters_since_last_log", i.dlUnlogged)
		i.dlUnlogged = 0
	}
}
