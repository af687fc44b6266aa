package actors

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

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
}

func newIngress(n *Node) *ingress {
	in := &ingress{node: n, wake: make(chan struct{})}
	in.pid = n.system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(ackMsg); ok {
			in.onAck(m.slot)
		}
	}))
	in.p = newProducer(n, in.pid, uint64(time.Now().UnixNano()))
	return in
}

// produce routes rec and waits until it has been handed to every
// destination. If ctx ends first, the record stays buffered and is sent as
// credit returns.
func (in *ingress) produce(ctx context.Context, stream string, rec core.Record) error {
	if len(in.node.table.Load().routes(stream)) == 0 {
		return fmt.Errorf("actors: produce to %q: %w (no operator reads it)", stream, core.ErrUnknownStream)
	}
	if rec.EventTime.IsZero() {
		rec.EventTime = time.Now()
	}
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return fmt.Errorf("actors: produce to %q: %w", stream, core.ErrStopped)
	}
	in.p.begin()
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

// close makes later produce calls fail with ErrStopped.
func (in *ingress) close() {
	in.mu.Lock()
	in.closed = true
	in.mu.Unlock()
}
