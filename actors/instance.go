package actors

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/ckpt"
	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/persistence"
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
	op      *operator
	node    *Node
	spec    topology.OperatorSpec
	key     instKey
	lo      int // first key group owned
	hi      int // end of the owned key groups
	pid     *actor.PID
	log     *slog.Logger
	outs    map[string]bool // declared outputs plus the dead-letter stream
	outputs []string        // the same, as a list (controls go to each)

	// status, read by other goroutines
	mu           sync.Mutex
	state        status.InstanceState
	restarts     int
	lastError    string
	failedReason string
	closeErrV    error
	strikes      []strike  // failures counting toward the restart policy (strikes.go)
	failedItem   bool      // the failure being reported was an item's attempt
	progressed   bool      // an item succeeded since the last failure
	pub          published // counters published for status, without mu

	ctx    context.Context
	cancel context.CancelFunc
	octx   *opContext
	store  *persistence.Store
	out    *flow.Producer
	timers timerQueue
	// event-time timers, fired by the watermark (eventtime.go)
	etimers timerQueue

	mode            mode
	opv             core.Operator // current incarnation's operator (active mode)
	failed          bool          // policy exhausted: dead-letter everything
	failing         bool          // failed since the last successful item (strikes.go)
	rejected        error         // set by callRecord when ProcessRecord refused its record as bad (core.ErrBadRecord)
	initing         bool          // Init is running
	cur             work          // item in progress; survives restarts
	stash           []unit        // input held back while blocked or awaiting
	blocked         bool          // a full output buffer has no credit
	flushQueued     bool
	retryQueued     bool
	pollQueued      bool
	pollIdle        time.Duration
	pollTimer       *time.Timer
	produced        int64           // records produced over the instance's life (stored as metaProduced)
	producedSet     int64           // the value of produced last written to the store
	processedSet    int64           // the value of processed last written to the store
	dlUnlogged      int64           // dead letters not yet logged
	ins             inputs          // upstreams: barriers, watermarks, end-of-stream
	commitErr       error           // the last state commit's error, if it failed
	watermark       int64           // the instance's event-time watermark (ns; endOfTime once its input ended)
	watermarkSet    int64           // the watermark last stored
	wmSent          int64           // the watermark last forwarded
	idleSent        bool            // idleness forwarded, and no watermark since
	etDue           bool            // event-time timers may be due: they fire before further input
	inputEnded      bool            // every upstream ended (a source: Poll returned ErrEndOfStream)
	src             sourceWM        // a source's watermark generation (sourcewm.go)
	ck              checkpointState // its part in checkpoints and rollbacks
	releaseReported bool            // the coordinator was told of the release
	// restartBackoff hands out the delays before restarts (the
	// supervisor's goroutine only; a new one from InitialBackoff when
	// strike says the backoff starts over).
	restartBackoff *backoff.Backoff
	dlNextLog      time.Time

	at         attemptState     // the current attempt
	dur        durability       // at-least-once bookkeeping
	logBacklog []persistence.KV // committed writes not yet in the state log
	sampleN    int              // records since the last status.Observer.Processed
	// A source's reservation of records for sampling (sampleSource): how
	// many are left, the offset of the next that starts a trace, and the
	// distance between those that do.
	smpLeft, smpNext, smpEvery int
}

// published are an instance's counters that other goroutines read (its
// status) without its mu.
type published struct {
	processed   atomic.Int64
	produced    atomic.Int64 // records produced, as published for status
	buffered    atomic.Int64 // records waiting in the output buffers
	deadLetters atomic.Int64
	transient   atomic.Int64 // transient failures of Poll and Flush (e.g. brokers unreachable)
	queued      atomic.Int64 // records delivered and not yet processed
	blockedTime spellClock   // time blocked by backpressure
	busyTime    spellClock   // time busy in the operator's callbacks (blocked.go)
	finished    atomic.Bool  // input ended, timers fired, end-of-stream forwarded
	watermark   atomic.Int64 // the watermark, as published for status
}

// checkpointState is an instance's part in checkpoints and rollbacks
// (checkpointing.go, rollback.go).
type checkpointState struct {
	hold        uint64      // state commits wait for the node's copy of this checkpoint
	gen         uint64      // rollback generation: older batches are dropped (rollback.go)
	future      []*batchMsg // batches of a later generation, waiting for the reset
	restoredGen uint64      // the generation whose state the instance restored
}

// attemptState is the working state of the current attempt of a record,
// timer or Poll (attempt.go): the key group and event time records are
// produced in, the timer changes made so far, the span it runs in.
type attemptState struct {
	group    int             // the key group being worked in
	event    time.Time       // event time of records produced now
	timerOps []timerOp       // processing-time timer changes of the attempt
	etOps    []timerOp       // event-time timer changes of the attempt
	trace    string          // trace header for records produced now ("": untraced)
	end      func(err error) // ends the current span, if any
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
	workEventTimer
)

// work is the item an instance is processing; when an attempt fails it stays
// set so that the next incarnation retries it.
type work struct {
	kind     workKind
	batch    *batchMsg
	idx      int
	from     int // where this attempt took up batch: records [from, idx) are done
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
		state:  status.StateAwaiting,
		ctx:    ctx,
		cancel: cancel,
		store:  op.node.db.NewStore(key.op),
		timers: newTimerQueue(),
	}
	inst.setOutputs(spec.Meta.Outputs)
	inst.watermark, inst.watermarkSet, inst.wmSent = noWatermark, noWatermark, noWatermark
	inst.etimers = newTimerQueue()
	inst.pub.watermark.Store(noWatermark)
	inst.ck.gen = op.node.gen.Load()
	fc := op.node.flowConfig()
	fc.Operator, fc.Index, fc.Epoch = key.op, key.index, key.epoch
	inst.out = flow.New(host{op.node}, fc, op.node.replyTo(pid),
		uint64(key.index)+uint64(len(key.op))<<32+uint64(key.epoch)<<48)
	inst.out.SetGeneration(inst.ck.gen)
	inst.octx = &opContext{Context: ctx, inst: inst}
	inst.at.group = lo
	return inst
}

// setOutputs sets the streams the instance may produce to: outputs and its
// dead-letter stream.
func (i *instance) setOutputs(outputs []string) {
	i.outs = map[string]bool{core.DeadLetterStream(i.key.op): true}
	for _, s := range outputs {
		i.outs[s] = true
	}
	i.outputs = i.outputs[:0]
	for s := range i.outs {
		i.outputs = append(i.outputs, s)
	}
	slices.Sort(i.outputs)
}

// adopt takes the operator's new settings of the same epoch: outputs (the
// next Produce may use a new one; barriers and watermarks go to every
// one), inputs (alignment counts the new upstreams) and the dead-letter
// threshold. The supervisor's restart policy stays the one the instance
// was spawned with until the next epoch.
func (i *instance) adopt(spec topology.OperatorSpec) {
	if spec.Epoch != i.key.epoch || spec.Revision <= i.spec.Revision {
		return
	}
	i.spec = spec
	i.setOutputs(spec.Meta.Outputs)
	i.ins.refresh(i.node.topology(), i.spec)
	i.log.Info("operator settings changed; adopted", "revision", spec.Revision, "outputs", spec.Meta.Outputs)
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
		if i.admit(m) {
			i.input(unit{kind: unitBatch, batch: m})
		}
	case pollMsg:
		i.pollQueued = false
		i.input(unit{kind: unitPoll})
	case timerMsg:
		i.input(unit{kind: unitTimers})
	case ackMsg:
		i.out.Ack(m.slot)
		i.settle()
		i.drain()
	case bounceMsg:
		i.onBounce(m.slot, m.seq, m.records, m.control)
	case durableMsg:
		i.onDurable(m.slot, m.seq, m.rewound)
	case rewindMsg:
		i.rewind()
		i.settle()
	case flushMsg:
		i.flushQueued = false
		i.send(true)
	case routesMsg:
		i.out.Refresh()
		i.settle()
		i.drain()
	case resumeMsg:
		i.drain()
	case retryMsg:
		i.retryQueued = false
		i.scheduleRetry()
		i.settle()
		i.drain()
	case commitMsg:
		if i.mode == modeActive || (i.mode == modeReleased && len(i.dur.pending) > 0) {
			i.observedCommit(!i.node.cfg.NoSync)
		}
	case activateMsg:
		if m.gen < i.ck.gen {
			// Sent before a rollback that reset this instance since: the
			// coordinator restores it or asks for its state again.
			i.log.Debug("ignoring an activation from before a rollback", "sent in", m.gen, "generation", i.ck.gen)
			return
		}
		if m.gen > i.ck.gen {
			// Every instance is reset into a generation before the
			// coordinator activates anything in it (spawn resets one added
			// during a rollback): this one missed its reset.
			i.log.Error("ignoring an activation from a generation this instance was not reset into", "sent in", m.gen, "generation", i.ck.gen)
			i.setLastError(fmt.Sprintf("activation of generation %d ignored in generation %d", m.gen, i.ck.gen))
			return
		}
		base := i.node.base.Load()
		if m.checkpoint && i.mode == modeAwaiting {
			base = i.node.restoreBase(base)
			if err := i.node.restoreGroups(base, i.key.op, i.lo, i.hi); err != nil {
				// Starting without its state would break exactly-once: wait
				// and try again.
				i.log.Error("restoring state from the checkpoint failed; retrying", "error", err)
				i.setLastError(err.Error())
				pid, root := i.pid, i.node.system.Root
				i.node.afterFunc(time.Second, func() { root.Send(pid, m) })
				return
			}
			i.ck.restoredGen = i.ck.gen
		}
		if m.restore {
			if err := i.restoreFromLog(); err != nil {
				i.log.Error("state restore failed; starting from what this node has", "error", err)
				i.setLastError(err.Error())
			}
		}
		i.activate()
		if m.checkpoint && base != nil {
			i.commitSink(base.ID)
		}
	case releaseMsg:
		i.release()
	case specMsg:
		i.adopt(m.spec)
	case acquireMsg:
		if i.mode == modeReleased {
			i.mode = modeAwaiting
			i.setState(status.StateAwaiting)
		}
	case ckpt.Barrier:
		i.onTrigger(m.ID)
	case ckpt.Taken:
		i.onCheckpointTaken(m.ID)
		if i.mode == modeActive && i.store.Pending() > 0 {
			i.observedCommit(!i.node.cfg.NoSync)
		}
	case ckpt.Complete:
		i.onCheckpointComplete(m.ID)
		i.settle()
		if m.Done != nil {
			close(m.Done)
		}
	case ckpt.Abort:
		i.onCheckpointAbort(m.ID)
		i.settle()
	case ckpt.Reset:
		if m.Gen > i.ck.gen {
			i.reset(m.Gen)
		}
		if i.node.ckpt != nil { // a node without checkpoints rolls back only in tests
			i.node.system.Root.Send(i.node.ckpt, ckpt.ResetDone{Key: i.key.ckKey(), Gen: m.Gen})
		}
	case restoreMsg:
		err := i.restoreAndStart(m.gen, m.meta)
		i.node.system.Root.Send(i.node.ckpt, ckpt.Restored{Key: i.key.ckKey(), Gen: m.gen, Err: err})
	case quiesceMsg:
		m.reply <- i.quiet()
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

// unitKind says what a unit of input is.
type unitKind uint8

const (
	unitBatch  unitKind = iota // a batch of records
	unitPoll                   // a source's turn to poll
	unitTimers                 // timers may be due
)

// unit is one unit of input: what the instance takes, or stashes while it
// cannot.
type unit struct {
	kind  unitKind
	batch *batchMsg // unitBatch
}

// input takes one unit of input.
func (i *instance) input(u unit) {
	switch i.mode {
	case modeReleased:
		if u.kind == unitBatch {
			i.bounceBack(u.batch)
		}
		return
	case modeAwaiting:
		if u.kind == unitBatch {
			i.stash = append(i.stash, u)
		}
		return
	}
	if i.blocked || len(i.stash) > 0 || i.etDue || i.node.paused() {
		i.stash = append(i.stash, u)
		return
	}
	i.handle(u)
	i.settle()
}

// handle processes one unit of input in active mode.
func (i *instance) handle(u unit) {
	defer i.endBusy(i.beginBusy(u.kind))
	switch u.kind {
	case unitBatch:
		if i.ins.isBlocked(u.batch) {
			i.ins.blocked = append(i.ins.blocked, u.batch) // after a barrier still being aligned
			return
		}
		i.runBatch(u.batch, 0, 0, "")
	case unitPoll:
		i.poll()
	case unitTimers:
		i.fireTimers()
	}
	if i.etDue {
		i.fireEventTimers() // set in the past by this unit's callbacks
	}
}

// quiet reports whether the instance holds nothing that could still move:
// no unsent or unacknowledged output, no stashed or held input, no item in
// progress. Records held for a stream nobody reads do not count: nothing
// will take them (Node.Stop drains everything else and stops).
func (i *instance) quiet() string {
	blocked := i.blocked && (i.out.Pending() || i.out.Unread() == 0)
	stashed := 0
	for _, u := range i.stash {
		if u.kind == unitBatch {
			stashed++ // polls and timer ticks wait too, but hold no record
		}
	}
	var held []string
	if stashed > 0 {
		held = append(held, fmt.Sprintf("%d input batches stashed", stashed))
	}
	if i.out.Pending() {
		held = append(held, "output not sent")
	}
	if n := i.out.Inflight(); n > 0 {
		held = append(held, fmt.Sprintf("%d batches not acknowledged", n))
	}
	if n := len(i.ins.blocked); n > 0 {
		held = append(held, fmt.Sprintf("%d input batches held to align checkpoint %d", n, i.ins.aligning))
	}
	if i.cur.kind != workNone {
		held = append(held, "a record or timer in progress")
	}
	if i.etDue && i.mode == modeActive {
		held = append(held, "event-time timers due")
	}
	if blocked {
		held = append(held, "blocked by backpressure")
	}
	if len(held) == 0 {
		return ""
	}
	return i.key.String() + ": " + strings.Join(held, ", ")
}

// stateName returns the instance's state for messages.
func (i *instance) stateName() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.state.String()
}

// onBounce takes back records a destination did not process.
func (i *instance) onBounce(slot int32, seq uint64, recs []core.Record, c *flow.Control) {
	if c != nil && c.Kind == flow.Barrier && i.exactlyOnce() {
		i.node.system.Root.Send(i.node.ckpt, ckpt.Lost{ID: c.Checkpoint,
			Reason: fmt.Sprintf("operator %s: barrier %d came back from an instance that moved", i.key, c.Checkpoint)})
	}
	if b := i.out.Bounce(slot, recs, c); b != nil && i.node.cfg.AtLeastOnce {
		i.dropSnapshotsOn(b, seq)
	}
	i.scheduleRetry()
	i.settle()
	i.drain()
}

// scheduleRetry arranges a retryMsg when bounced records wait for a retry.
func (i *instance) scheduleRetry() {
	if i.retryQueued || !i.out.RetryBounced(time.Now()) {
		return
	}
	i.retryQueued = true
	pid, root := i.pid, i.node.system.Root
	i.node.afterFunc(flow.BounceRetry, func() { root.Send(pid, retryMsg{}) })
}

// bounceBack returns an unprocessed batch to its producer.
func (i *instance) bounceBack(b *batchMsg) {
	dequeued(i.node, b)
	i.node.replyBounce(b.From, b.Slot, b.Seq, b.Records, b.Control)
}

// settle runs after each unit of input and each message that may free
// output: it sends what the rule allows, publishes the counters and arms
// the timers.
func (i *instance) settle() {
	i.pub.produced.Store(i.produced)
	i.scheduleTimers()
	i.send(false)
	i.pub.buffered.Store(int64(i.out.Buffered()))
	if i.mode == modeReleased && !i.releaseReported {
		i.reportReleased()
	}
}

// send is the one rule for when output leaves: a full buffer (BatchSize
// records) leaves as soon as it is full and has credit, after the record
// that filled it; partial buffers leave when the instance has caught up
// with its mailbox. A flushMsg, sent to itself behind whatever the mailbox
// already holds, tells that: send(true) runs when it arrives. So under load
// batches fill up, and when idle a record waits at most for the messages
// ahead of it. It also notes whether the instance is blocked (a full
// buffer without credit, or too much held output).
func (i *instance) send(idle bool) {
	i.setBlocked(i.out.Flush(idle))
	if !idle && !i.flushQueued && i.out.Pending() {
		i.flushQueued = true
		i.node.system.Root.Send(i.pid, flushMsg{})
	}
}

// drain fires the event-time timers due, then processes stashed input,
// while the instance is active, not blocked and the node healthy.
func (i *instance) drain() {
	if i.etDue && i.mode == modeActive && !i.blocked && !i.node.paused() {
		i.pub.busyTime.set(true)
		i.fireEventTimers()
		i.pub.busyTime.set(false)
		i.settle()
	}
	for i.mode == modeActive && !i.blocked && !i.etDue && len(i.stash) > 0 && !i.node.paused() {
		u := i.stash[0]
		i.stash[0] = unit{}
		i.stash = i.stash[1:]
		i.handle(u)
		i.settle()
	}
	if len(i.stash) == 0 {
		i.stash = nil
	}
}
