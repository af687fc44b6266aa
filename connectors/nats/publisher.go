package nats

import (
	"context"
	"sync"

	natsgo "github.com/nats-io/nats.go"
)

// publisherQueue bounds the epochs handed to a publisher and not yet
// published: a Commit waits when it is full.
const publisherQueue = 4

// epochBatch is one epoch's messages, with their ids, for the publisher.
type epochBatch struct {
	epoch, ck uint64
	last      uint64 // the index of its last record
	msgs      []*natsgo.Msg
	err       error // the result: nil once every message is acknowledged
}

// publisher publishes the exactly-once sink's committed epochs on a
// goroutine of its own, in order, and reports each epoch's result. The
// sink starts it at its first Commit with anything to publish and stops
// it in Close; under exactly-once it alone uses the sink's async
// publishing (Sink.publish, Sink.flush: s.pending and s.retry).
type publisher struct {
	in   chan epochBatch
	stop chan struct{}
	done chan struct{}

	mu  sync.Mutex
	out []epochBatch // results not yet collected
}

// startPublisher starts s's publisher, once.
func (s *Sink) startPublisher() {
	if s.pub != nil {
		return
	}
	p := &publisher{in: make(chan epochBatch, publisherQueue), stop: make(chan struct{}), done: make(chan struct{})}
	s.pub = p
	go p.run(s)
}

// run publishes epochs until stopped.
func (p *publisher) run(s *Sink) {
	defer close(p.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // ends with run: cancel closes ctx
		select {
		case <-p.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case b := <-p.in:
			b.err = s.publishAll(ctx, b.msgs)
			b.msgs = nil
			p.mu.Lock()
			p.out = append(p.out, b)
			p.mu.Unlock()
		case <-p.stop:
			return
		}
	}
}

// enqueue hands b to the publisher, waiting while its queue is full.
func (p *publisher) enqueue(ctx context.Context, b epochBatch) error {
	select {
	case p.in <- b:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// results returns (and forgets) the epochs published since the last call.
func (p *publisher) results() []epochBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.out
	p.out = nil
	return out
}

// close stops the publisher and waits for it; what it had not published
// stays in State, published again after the next start.
func (p *publisher) close() {
	close(p.stop)
	<-p.done
}

// publishAll publishes msgs and waits for every ack (see flush).
func (s *Sink) publishAll(ctx context.Context, msgs []*natsgo.Msg) error {
	for _, m := range msgs {
		if err := s.publish(m); err != nil {
			s.pending, s.retry = nil, nil
			return err
		}
	}
	err := s.flush(ctx)
	s.pending, s.retry = nil, nil // on failure, published again (same ids) by a later Commit
	return err
}
