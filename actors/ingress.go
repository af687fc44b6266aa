package actors

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/internal/core"
)

// ingress produces records from outside the runtime (Node.Produce). Callers
// block while a destination has no credit: backpressure reaches the edge.
type ingress struct {
	node *Node
	pid  *actor.PID

	mu     sync.Mutex // guards p, wake, closed
	p      *producer
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
		case *wire.Ack:
			in.onAck(m.Slot)
		case bounceMsg:
			in.onBounce(m.slot, m.records)
		case durableMsg, *wire.DurableAck:
			// Records produced from outside are not replayable: nothing
			// waits for their durability.
		case *wire.Bounce:
			if recs, err := wire.DecodeRecords(m.Records); err == nil {
				in.onBounce(m.Slot, recs)
			} else {
				in.onAck(m.Slot)
			}
		}
	}))
	in.p = newProducer(n, in.pid, uint64(time.Now().UnixNano()))
	return in
}

// produce routes rec and waits until it has been handed to every
// destination. If ctx ends first, the record stays buffered and is sent as
// credit returns.
func (in *ingress) produce(ctx context.Context, stream string, rec core.Record) error {
	if rec.EventTime.IsZero() {
		rec.EventTime = time.Now()
	}
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return fmt.Errorf("actors: produce to %q: %w", stream, core.ErrStopped)
	}
	in.p.begin()
	if len(in.p.streams[stream]) == 0 {
		in.mu.Unlock()
		return fmt.Errorf("actors: produce to %q: %w (no operator reads it)", stream, core.ErrUnknownStream)
	}
	in.p.produce(stream, rec)
	for {
		in.p.flush(true)
		if !in.p.pending() {
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

// onAck returns credit, sends what was waiting for it and wakes producers.
func (in *ingress) onAck(slot int32) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.p.ack(slot)
	in.p.flush(true)
	close(in.wake)
	in.wake = make(chan struct{})
}

// onBounce takes back records a destination did not process.
func (in *ingress) onBounce(slot int32, recs []core.Record) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.p.bounce(slot, recs)
	in.p.flush(true)
	close(in.wake)
	in.wake = make(chan struct{})
	in.scheduleRetry()
}

// scheduleRetry re-sends bounced records after bounceRetry. Call with
// in.mu held.
func (in *ingress) scheduleRetry() {
	if in.retryQueued || !in.p.retryBounced(time.Now()) {
		return
	}
	in.retryQueued = true
	time.AfterFunc(bounceRetry, func() {
		in.mu.Lock()
		defer in.mu.Unlock()
		in.retryQueued = false
		if in.closed {
			return
		}
		in.scheduleRetry()
		in.p.flush(true)
		close(in.wake)
		in.wake = make(chan struct{})
	})
}

// refresh adopts a new route table and sends what it allows.
func (in *ingress) refresh() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.p.table == nil {
		return
	}
	in.p.refresh()
	in.p.flush(true)
	close(in.wake)
	in.wake = make(chan struct{})
}

// close makes later produce calls fail with ErrStopped.
func (in *ingress) close() {
	in.mu.Lock()
	in.closed = true
	in.mu.Unlock()
}
