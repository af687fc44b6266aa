package actors

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/internal/core"
)

// ingress produces records from outside the runtime (Node.Produce). Callers
// block while a destination has no credit: backpressure reaches the edge.
type ingress struct {
	node *Node
	pid  *actor.PID

	mu     sync.Mutex // guards p, wake, closed
	p      *flow.Producer
	wake   chan struct{} // closed and replaced on every ack
	closed bool

	retryQueued bool
}

func newIngress(n *Node) *ingress {
	in := &ingress{node: n, wake: make(chan struct{})}
	in.pid = n.system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case ackMsg:
			in.onAck(m.slot)
		case bounceMsg:
			in.onBounce(m.slot, m.records, m.control)
		case durableMsg:
			// Records produced from outside are not replayable: nothing
			// waits for their durability.
		}
	}))
	in.p = flow.New(host{n}, n.flowConfig(), n.replyTo(in.pid), uint64(time.Now().UnixNano()))
	return in
}

// produce routes rec and returns once it is sent or buffered within each
// destination's credit window, like an instance's output: it waits only
// while a destination's buffer is full (Credits batches unacknowledged and
// BufferBatches×BatchSize records waiting), so one slow reader of a
// stream does not hold back the others beyond its window. Buffered records
// are sent as credit returns; Stop delivers them before the node stops. If
// ctx ends while waiting, the record stays buffered all the same.
func (in *ingress) produce(ctx context.Context, stream string, rec core.Record) error {
	if err := in.node.checkRecordSize(stream, rec); err != nil {
		return fmt.Errorf("actors: %w", err)
	}
	if rec.EventTime.IsZero() {
		rec.EventTime = time.Now()
	}
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return fmt.Errorf("actors: produce to %q: %w", stream, core.ErrStopped)
	}
	in.p.SetGeneration(in.node.gen.Load())
	in.p.Begin()
	if !in.p.Reads(stream) {
		in.mu.Unlock()
		return fmt.Errorf("actors: produce to %q: %w (no operator reads it)", stream, core.ErrUnknownStream)
	}
	in.p.Produce(stream, rec)
	for {
		if blocked := in.p.Flush(true); !blocked {
			in.mu.Unlock()
			return nil
		}
		wake := in.wake
		in.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("actors: produce to %q: record buffered, not yet delivered: %w", stream, ctx.Err())
		}
		in.mu.Lock()
	}
}

// checkRecordSize refuses a record larger than MaxRecordBytes.
func (n *Node) checkRecordSize(stream string, rec core.Record) error {
	if size := flow.RecordBytes(rec); size > n.cfg.MaxRecordBytes {
		return fmt.Errorf("produce to %q: %w: %d bytes of key, value and headers, the limit (MaxRecordBytes) is %d",
			stream, core.ErrRecordTooLarge, size, n.cfg.MaxRecordBytes)
	}
	return nil
}

// onAck returns credit, sends what was waiting for it and wakes producers.
func (in *ingress) onAck(slot int32) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.p.Ack(slot)
	in.sendAndWake()
}

// onBounce takes back records a destination did not process.
func (in *ingress) onBounce(slot int32, recs []core.Record, c *flow.Control) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.p.Bounce(slot, recs, c)
	in.sendAndWake()
	in.scheduleRetry()
}

// sendAndWake sends what the producer can and wakes blocked callers. Call
// with in.mu held.
func (in *ingress) sendAndWake() {
	in.p.Flush(true)
	close(in.wake)
	in.wake = make(chan struct{})
}

// scheduleRetry re-sends bounced records after flow.BounceRetry. Call with
// in.mu held.
func (in *ingress) scheduleRetry() {
	if in.retryQueued || !in.p.RetryBounced(time.Now()) {
		return
	}
	in.retryQueued = true
	in.node.afterFunc(flow.BounceRetry, func() {
		in.mu.Lock()
		defer in.mu.Unlock()
		in.retryQueued = false
		if in.closed {
			return
		}
		in.scheduleRetry()
		in.sendAndWake()
	})
}

// refresh adopts a new route table and sends what it allows.
func (in *ingress) refresh() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.p.Refresh()
	in.sendAndWake()
}

// quiet reports what the ingress holds that is not sent yet ("" when
// nothing): Stop and leave wait for it like for an instance's output.
func (in *ingress) quiet() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.p.Pending() {
		return ""
	}
	return fmt.Sprintf("records from outside (Node.Produce): %d not sent", in.p.Buffered())
}

// close makes later produce calls fail with ErrStopped.
func (in *ingress) close() {
	in.mu.Lock()
	in.closed = true
	in.mu.Unlock()
}
