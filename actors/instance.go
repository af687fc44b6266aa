package actors

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/placement"
	"github.com/sluicehq/sluice/topology"
)

// instance is one operator instance on this node. It outlives the actor
// incarnations that run it: after a failure protoactor creates a new actor
// (and the instance a new Operator value) while the instance keeps its
// store, timers, output buffers, stashed input and the item being retried.
//
// An instance is in one of three modes:
//
//   - awaiting: it has just been placed here and waits for its state (from
//     the node that held it before); input is stashed;
//   - active: it processes input;
//   - released: it was placed elsewhere; input is bounced back to the
//     producers, which re-send it to the new owner.
//
// Every field below the status block is touched only on the instance's
// actor goroutine.
type instance struct {
	op   *operator
	node *Node
	spec topology.OperatorSpec
	key  instKey
	lo   int // first key group owned
	hi   int // end of the owned key groups
	pid  *actor.PID
	log  *slog.Logger
	outs map[string]bool // declared outputs plus the dead-letter stream

	// status, read by other goroutines
	mu           sync.Mutex
	state        string
	restarts     int
	lastError    string
	failedReason string
	closeErrV    error
	processed    atomic.Int64
	producedPub  atomic.Int64 // produced, published for status
	bufferedPub  atomic.Int64 // records waiting in the output buffers, published
	deadLetters  atomic.Int64
	transient    atomic.Int64 // transient failures of Poll and Flush (e.g. brokers unreachable)
	queued       atomic.Int64 // records delivered and not yet processed

	ctx    context.Context
	cancel context.CancelFunc
	octx   *opContext
	store  *persistence.Store
	out    *producer
	timers timerQueue

	mode         mode
	opv          core.Operator // current incarnation's operator (active mode)
	failed       bool          // policy exhausted: dead-letter everything
	cur          work          // item in progress; survives restarts
	stash        []any         // input held back while blocked or awaiting
	blocked      bool          // a full output buffer has no credit
	flushQueued  bool
	retryQueued  bool
	pollQueued   bool
	pollIdle     time.Duration
	pollTimer    *time.Timer
	produced     int64 // records produced over the instance's life (stored as metaProduced)
	producedSet  int64 // the value of produced last written to the store
	processedSet int64 // the value of processed last written to the store
	dlUnlogged   int64 // dead letters not yet logged
	dlNextLog    time.Time

	// current attempt
	curGroup   int
	curEvent   time.Time
	timerOps   []timerOp
	dur        durability       // at-least-once bookkeeping
	logBacklog []persistence.KV // committed writes not yet in the state log
	curTrace   string           // trace header for records produced now ("": untraced)
	curEnd     func(err error)  // ends the current span, if any
	sampleN    int              // records since the last Observer.Processed
}

// metaProcessed and metaProduced name the stored processed- and
// produced-records counters, kept in the instance's first key group so
// that they survive restarts and moves.
const (
	metaProcessed = "processed"
	metaProduced  = "produced"
)

// mode is an instance's role on this node.
type mode uint8

const (
	modeAwaiting mode = iota
	modeActive
	modeReleased
)

// workKind says what an instance is in the middle of.
type workKind uint8

const (
	workNone workKind = iota
	workRecord
	workTimer
	workPoll
)

// work is the item an instance is processing; when an attempt fails it stays
// set so that the next incarnation retries it.
type work struct {
	kind     workKind
	batch    *batchMsg
	idx      int
	timer    timerItem
	attempts int
	lastErr  string
}

// failure is the panic value that hands a failed attempt to the supervisor.
type failure struct {
	err   error
	value any
	stack []byte
}

func (f *failure) Error() string { return f.String() }

func (f *failure) String() string {
	if f.err != nil {
		return f.err.Error()
	}
	return fmt.Sprint(f.value)
}

func newInstance(op *operator, spec topology.OperatorSpec, key instKey, lo, hi int, pid *actor.PID) *instance {
	ctx, cancel := context.WithCancel(context.Background())
	inst := &instance{
		op:     op,
		node:   op.node,
		spec:   spec,
		key:    key,
		lo:     lo,
		hi:     hi,
		pid:    pid,
		log:    op.node.log.With("operator", key.op, "instance", key.index, "epoch", key.epoch),
		outs:   map[string]bool{core.DeadLetterStream(key.op): true},
		state:  "awaiting",
		ctx:    ctx,
		cancel: cancel,
		store:  op.node.db.NewStore(key.op),
		timers: newTimerQueue(),
	}
	for _, s := range spec.Meta.Outputs {
		inst.outs[s] = true
	}
	inst.out = newProducer(op.node, pid, uint64(key.index)+uint64(len(key.op))<<32+uint64(key.epoch)<<48)
	inst.octx = &opContext{Context: ctx, inst: inst}
	inst.curGroup = lo
	return inst
}

// newIncarnation is the actor producer: protoactor calls it on spawn and on
// every restart.
func (i *instance) newIncarnation() actor.Actor { return &instanceActor{i} }

// instanceActor is one incarnation of an instance.
type instanceActor struct{ i *instance }

// Receive dispatches messages to the instance.
func (a *instanceActor) Receive(ctx actor.Context) {
	i := a.i
	switch m := ctx.Message().(type) {
	case *batchMsg:
		i.input(m)
	case pollMsg:
		i.pollQueued = false
		i.input(m)
	case timerMsg:
		i.input(m)
	case ackMsg:
		i.onAck(m.slot)
	case *wire.Ack:
		i.onAck(m.Slot)
	case bounceMsg:
		i.onBounce(m.slot, m.seq, m.records)
	case durableMsg:
		i.onDurable(m.slot, m.seq, m.rewound)
	case *wire.DurableAck:
		i.onDurable(m.Slot, m.Seq, m.Rewound)
	case rewindMsg:
		i.rewind()
		i.settle()
	case *wire.Bounce:
		recs, err := wire.DecodeRecords(m.Records)
		if err != nil {
			i.log.Error("dropped a corrupt bounce", "error", err)
			i.onAck(m.Slot)
			return
		}
		i.onBounce(m.Slot, m.Seq, recs)
	case flushMsg:
		i.flushQueued = false
		i.blocked = i.out.flush(true)
	case routesMsg:
		i.out.refresh()
		i.settle()
		i.drain()
	case retryMsg:
		i.retryQueued = false
		i.scheduleRetry()
		i.settle()
		i.drain()
	case commitMsg:
		if i.mode == modeActive || (i.mode == modeReleased && len(i.dur.pending) > 0) {
			i.commit(!i.node.cfg.NoSync)
		}
	case activateMsg:
		if m.restore {
			if err := i.restoreFromLog(); err != nil {
				i.log.Error("state restore failed; starting from what this node has", "error", err)
				i.setLastError(err.Error())
			}
		}
		i.activate()
	case releaseMsg:
		i.release()
	case acquireMsg:
		if i.mode == modeReleased {
			i.mode = modeAwaiting
			i.setState("awaiting")
		}
	case quiesceMsg:
		m.reply <- !i.out.pending() && len(i.stash) == 0 && i.cur.kind == workNone && !i.blocked
	case *actor.Started:
		if i.mode == modeActive {
			i.startIncarnation()
		}
	case *actor.Restarting:
		i.onRestarting()
	case *actor.Stopping:
		i.onStopping()
	}
}

// input takes one unit of input (a batch, a poll or a timer tick).
func (i *instance) input(m any) {
	switch i.mode {
	case modeReleased:
		if b, ok := m.(*batchMsg); ok {
			i.bounceBack(b)
		}
		return
	case modeAwaiting:
		if _, ok := m.(*batchMsg); ok {
			i.stash = append(i.stash, m)
		}
		return
	}
	if i.blocked || len(i.stash) > 0 {
		i.stash = append(i.stash, m)
		return
	}
	i.handle(m)
	i.settle()
}

// handle processes one unit of input in active mode.
func (i *instance) handle(m any) {
	switch m := m.(type) {
	case *batchMsg:
		i.runBatch(m, 0, 0, "")
	case pollMsg:
		i.poll()
	case timerMsg:
		i.fireTimers()
	}
}

// onAck returns a credit and sends or processes what was waiting for it.
func (i *instance) onAck(slot int32) {
	i.out.ack(slot)
	i.settle()
	i.drain()
}

// onBounce takes back records a destination did not process.
func (i *instance) onBounce(slot int32, seq uint64, recs []core.Record) {
	if b := i.out.bounce(slot, recs); b != nil && i.node.cfg.AtLeastOnce {
		i.dropSnapshotsOn(b, seq)
	}
	i.scheduleRetry()
	i.settle()
	i.drain()
}

// scheduleRetry arranges a retryMsg when bounced records wait for a retry.
func (i *instance) scheduleRetry() {
	if i.retryQueued || !i.out.retryBounced(time.Now()) {
		return
	}
	i.retryQueued = true
	pid, root := i.pid, i.node.system.Root
	time.AfterFunc(bounceRetry, func() { root.Send(pid, retryMsg{}) })
}

// bounceBack returns an unprocessed batch to its producer.
func (i *instance) bounceBack(b *batchMsg) {
	dequeued(i.node, b)
	if b.from != nil {
		i.node.replyBounce(b.from, b.slot, b.seq, b.records)
	}
}

// settle sends full output buffers, notes whether the instance is blocked
// and makes sure partial buffers are flushed once the mailbox is caught up.
func (i *instance) settle() {
	i.producedPub.Store(i.produced)
	defer func() { i.bufferedPub.Store(int64(i.out.buffered())) }()
	i.scheduleTimers()
	i.blocked = i.out.flush(false)
	if !i.flushQueued && i.out.pending() {
		i.flushQueued = true
		i.node.system.Root.Send(i.pid, flushMsg{})
	}
}

// saveCounters stores the processed and produced counters, when they
// changed, with the instance's state (in its first key group) before a
// commit, so that they move with the instance: an instance that moved to
// another node reports what it did over its whole life, not only since it
// arrived.
func (i *instance) saveCounters() {
	if i.mode != modeActive {
		return
	}
	if n := i.processed.Load(); n != i.processedSet {
		i.store.SetMeta(i.lo, metaProcessed, binary.BigEndian.AppendUint64(nil, uint64(n)))
		i.processedSet = n
	}
	if i.produced != i.producedSet {
		i.store.SetMeta(i.lo, metaProduced, binary.BigEndian.AppendUint64(nil, uint64(i.produced)))
		i.producedSet = i.produced
	}
}

// drain processes stashed input while the instance is active and not
// blocked.
func (i *instance) drain() {
	for i.mode == modeActive && !i.blocked && len(i.stash) > 0 {
		m := i.stash[0]
		i.stash[0] = nil
		i.stash = i.stash[1:]
		i.handle(m)
		i.settle()
	}
	if len(i.stash) == 0 {
		i.stash = nil
	}
}

// runBatch processes m's records from index from; attempts and lastErr
// describe the failed attempts already made on that first record.
func (i *instance) runBatch(m *batchMsg, from, attempts int, lastErr string) {
	routing := m.routing
	kgs := i.spec.Meta.KeyGroups
	for j := from; j < len(m.records); j++ {
		i.cur = work{kind: workRecord, batch: m, idx: j, attempts: attempts, lastErr: lastErr}
		attempts, lastErr = 0, ""
		rec := m.records[j]
		rec.Stream = m.stream
		if i.failed {
			i.deadLetter(rec, m.stream, "instance failed: "+i.failedReasonSnapshot(), 0)
		} else if i.cur.attempts >= i.spec.Meta.Restart.DeadLetterAfter {
			i.deadLetter(rec, m.stream, i.cur.lastErr, i.cur.attempts)
		} else {
			kg := i.lo
			if routing == core.GroupBy {
				kg = placement.KeyGroup(rec.Key, kgs)
			}
			i.begin(kg, rec.EventTime)
			i.cur.attempts++
			if obs := i.node.cfg.Observer; obs != nil {
				i.observeRecord(obs, &rec, m)
			} else {
				i.callRecord(rec)
			}
			i.end()
		}
		i.out.flushFull()
	}
	i.cur = work{}
	if i.node.cfg.AtLeastOnce {
		i.dur.processed(m)
	}
	i.processed.Add(int64(len(m.records) - from))
	dequeued(i.node, m)
	if m.from != nil {
		i.node.replyAck(m.from, m.slot)
	}
}

// dequeued takes batch m, processed or bounced, off the queued counters
// that its delivery increased: the node's and, when one counted it, the
// destination instance's.
func dequeued(n *Node, m *batchMsg) {
	n.queued.Add(-int64(len(m.records)))
	if m.counted != nil {
		m.counted.queued.Add(-int64(len(m.records)))
		m.counted = nil
	}
}

// observeRecord runs callRecord with a span for a traced record and a
// timing for one record in ProcessedSampleEvery.
func (i *instance) observeRecord(obs Observer, rec *core.Record, m *batchMsg) {
	tp := traceOf(rec)
	i.sampleN++
	timed := i.sampleN >= ProcessedSampleEvery
	if tp == "" && !timed {
		i.callRecord(*rec)
		return
	}
	start := time.Now()
	if tp != "" {
		var wait time.Duration
		if !m.sent.IsZero() {
			wait = start.Sub(m.sent)
		}
		i.curTrace, i.curEnd = obs.StartSpan(SpanInfo{Parent: tp, Operator: i.key.op, Instance: i.key.index, Node: i.node.cfg.NodeID,
			Stream: m.stream, QueueWait: wait, Start: start})
	}
	i.callRecord(*rec)
	if i.curEnd != nil {
		i.curEnd(nil)
		i.curTrace, i.curEnd = "", nil
	}
	if timed {
		i.sampleN = 0
		done := time.Now()
		var since time.Duration
		if !rec.EventTime.IsZero() {
			since = done.Sub(rec.EventTime)
		}
		obs.Processed(i.key.op, i.key.index, done.Sub(start), since)
	}
}

// begin starts an attempt in key group kg.
func (i *instance) begin(kg int, event time.Time) {
	i.curGroup = kg
	i.curEvent = event
	i.store.Begin()
	i.out.begin()
	i.timerOps = i.timerOps[:0]
}

// end completes a successful attempt.
func (i *instance) end() {
	i.timers.apply(i.timerOps)
	i.timerOps = i.timerOps[:0]
	i.store.Begin()
}

// callRecord runs ProcessRecord, turning an error or panic into a failure
// for the supervisor.
func (i *instance) callRecord(rec core.Record) {
	defer i.recoverAttempt()
	if err := i.opv.ProcessRecord(i.octx, rec); err != nil {
		i.fail(err)
	}
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
// failure. It reports whether Poll failed transiently.
func (i *instance) callPoll(src core.Source) (transient bool) {
	defer i.recoverAttempt()
	err := src.Poll(i.octx)
	if err != nil && errors.Is(err, core.ErrTransient) {
		i.transient.Add(1)
		i.setLastError(err.Error())
		if now := time.Now(); now.After(i.dlNextLog) {
			i.dlNextLog = now.Add(time.Second)
			i.log.Warn("source failed; will retry", "error", err)
		}
		return true
	}
	if err != nil {
		i.fail(err)
	}
	return false
}

// fail records err as the current attempt's failure and hands it to the
// supervisor.
func (i *instance) fail(err error) {
	i.cur.lastErr = err.Error()
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
		i.cur.lastErr = "panic: " + fmt.Sprint(r)
	}
	i.setLastError(i.cur.lastErr)
	if i.curEnd != nil {
		i.curEnd(f)
		i.curTrace, i.curEnd = "", nil
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
	if !ok || i.failed || i.node.isStopping() {
		return
	}
	before := i.produced
	i.cur = work{kind: workPoll}
	i.begin(i.lo, time.Now())
	transient := i.callPoll(src)
	i.end()
	i.cur = work{}
	if transient {
		i.pollIdle = min(max(2*i.pollIdle, 50*time.Millisecond), 2*time.Second)
		i.schedulePoll(i.pollIdle)
		return
	}
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
		i.blocked = i.out.flush(false)
	}
}

// runTimer attempts (or dead-letters) the timer in i.cur.
func (i *instance) runTimer() {
	t := i.cur.timer
	if i.cur.attempts >= i.spec.Meta.Restart.DeadLetterAfter {
		i.deadLetter(core.Record{Key: []byte(t.key), EventTime: t.at}, "timer", i.cur.lastErr, i.cur.attempts)
		i.store.DeleteTimer(t.group, t.key)
		return
	}
	i.begin(t.group, t.at)
	i.cur.attempts++
	i.callTimer(t)
	if !i.timers.setDuring(i.timerOps, t.group, t.key) {
		i.store.DeleteTimer(t.group, t.key)
	}
	i.end()
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
	dl := rec
	dl.Headers = append(append([]core.Header(nil), rec.Headers...),
		core.Header{Key: core.HeaderError, Value: reason},
		core.Header{Key: core.HeaderAttempts, Value: strconv.Itoa(attempts)},
		core.Header{Key: core.HeaderOperator, Value: name},
		core.Header{Key: core.HeaderInstance, Value: strconv.Itoa(i.key.index)},
		core.Header{Key: core.HeaderStream, Value: stream},
	)
	i.out.begin()
	i.out.produce(core.DeadLetterStream(name), dl)
	i.deadLetters.Add(1)
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

// commit writes the instance's state.
func (i *instance) commit(sync bool) {
	i.saveCounters()
	flushed := i.flushOperator()
	var err error
	if i.node.cfg.StateLog != nil {
		err = i.store.CommitLogged(sync, &i.logBacklog)
	} else {
		err = i.store.Commit(sync)
	}
	if err != nil {
		i.log.Error("state commit failed; will retry", "error", err, "pending", i.store.Pending())
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
	if v, ok, err := i.store.GetMeta(i.lo, metaProcessed); err == nil && ok && len(v) == 8 {
		i.processed.Store(int64(binary.BigEndian.Uint64(v)))
	}
	i.processedSet = i.processed.Load()
	if v, ok, err := i.store.GetMeta(i.lo, metaProduced); err == nil && ok && len(v) == 8 {
		i.produced = int64(binary.BigEndian.Uint64(v))
		i.producedSet = i.produced
		i.producedPub.Store(i.produced)
	}
	i.node.event(i.key, "active")
	i.startIncarnation()
}

// startIncarnation creates the Operator, Inits it, resumes the item a failed
// incarnation left, and takes up stashed input and polling.
func (i *instance) startIncarnation() {
	i.opv = i.op.factory()
	i.failed = i.isFailed()
	if !i.failed {
		i.begin(i.lo, time.Now())
		func() {
			defer i.recoverAttempt()
			if err := i.opv.Init(i.octx); err != nil {
				i.cur.lastErr = "init: " + err.Error()
				panic(&failure{err: fmt.Errorf("init: %w", err)})
			}
		}()
		i.end()
	}
	i.setState("running")
	switch i.cur.kind {
	case workRecord:
		i.runBatch(i.cur.batch, i.cur.idx, i.cur.attempts, i.cur.lastErr)
	case workTimer:
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
		i.commit(true) // flushes and snapshots with the operator still there
		i.closeOperator()
		i.opv = nil
		i.timers.stop()
		i.timers = newTimerQueue()
		if i.pollTimer != nil {
			i.pollTimer.Stop()
		}
		i.pollQueued = false
		i.node.event(i.key, "released")
	}
	i.mode = modeReleased
	i.store.DropCache()
	for _, m := range i.stash {
		if b, ok := m.(*batchMsg); ok {
			i.bounceBack(b)
		}
	}
	i.stash = nil
	i.blocked = false
	i.setState("released")
	i.settle()
	i.node.system.Root.Send(i.node.coord, instanceReleased{key: i.key})
}

// onRestarting undoes the failed attempt and commits what earlier attempts
// wrote, so that the next incarnation starts from state in Pebble.
func (i *instance) onRestarting() {
	i.store.Rollback()
	i.out.rollback()
	i.timerOps = i.timerOps[:0]
	i.closeOperator()
	i.commit(true)
	i.store.DropCache()
	i.mu.Lock()
	i.restarts++
	if i.state != "failed" {
		i.state = "restarting"
	}
	i.mu.Unlock()
	if obs := i.node.cfg.Observer; obs != nil {
		obs.Restarted(i.key.op, i.key.index)
	}
}

// onStopping closes the operator and commits its state.
func (i *instance) onStopping() {
	i.cancel()
	if i.pollTimer != nil {
		i.pollTimer.Stop()
	}
	i.timers.stop()
	var err error
	if i.mode == modeActive {
		i.closeOperator()
		i.saveCounters()
		err = i.store.Commit(true)
		i.node.event(i.key, "stopped")
	}
	i.mu.Lock()
	i.closeErrV = err
	if i.state != "failed" {
		i.state = "stopped"
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
	i.state = "failed"
	i.failedReason = reason
	i.mu.Unlock()
	i.log.Error("operator instance failed: restart policy exhausted; its input now goes to the dead-letter stream", "reason", reason)
}

// isFailed reports whether the supervisor marked the instance failed.
func (i *instance) isFailed() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.state == "failed"
}

func (i *instance) failedReasonSnapshot() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.failedReason
}

func (i *instance) setLastError(s string) {
	i.mu.Lock()
	i.lastError = s
	i.mu.Unlock()
}

func (i *instance) setState(s string) {
	i.mu.Lock()
	if i.state != "failed" {
		i.state = s
	}
	i.mu.Unlock()
}

func (i *instance) closeErr() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.closeErrV
}
