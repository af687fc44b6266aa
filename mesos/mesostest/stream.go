package mesostest

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// stream is one SUBSCRIBE connection. Events are encoded (under the master
// lock, so their order is the order in which the master generated them)
// and queued; the HTTP handler goroutine that owns the connection drains
// the queue into the response as RecordIO records.
type stream struct {
	id    string
	codec *codec

	mu    sync.Mutex
	queue [][]byte

	notify    chan struct{} // capacity 1: queue became non-empty
	closing   chan struct{} // closed when the master ends the stream
	closeOnce sync.Once
	// silent: nothing more is written (StallSubscription,
	// DropSubscriptionSilently), the connection stays open.
	silent atomic.Bool
}

func newStream(c *codec) *stream {
	return &stream{
		id:      formatUUID(newUUID()),
		codec:   c,
		notify:  make(chan struct{}, 1),
		closing: make(chan struct{}),
	}
}

func (s *stream) push(frame []byte) {
	s.mu.Lock()
	s.queue = append(s.queue, frame)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *stream) take() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}

// close asks the owning handler to flush what is queued and end the
// response, which closes the connection.
func (s *stream) close() { s.closeOnce.Do(func() { close(s.closing) }) }

// send encodes ev for s and queues it.
func (s *stream) send(m *Master, ev *scheduler.Event) {
	b, err := s.codec.encode(ev)
	if err != nil {
		// Events are built by the master from well-formed values; an
		// encoding failure is a bug in the test master.
		m.logf("mesostest: dropping %s event on stream %s: %v", ev.GetType(), s.id, err)
		return
	}
	s.push(b)
}

// run writes queued events and heartbeats to w until the master closes the
// stream, the client goes away, or the master shuts down. It returns when
// the response must end.
func (s *stream) run(ctx context.Context, m *Master, w http.ResponseWriter, heartbeat time.Duration) {
	flusher, _ := w.(http.Flusher)
	rw := newRecordWriter(w)
	hb, err := s.codec.encode(&scheduler.Event{Type: scheduler.Event_HEARTBEAT})
	if err != nil {
		m.logf("mesostest: encoding heartbeat: %v", err)
		return
	}
	ticker := time.NewTicker(heartbeat)
	defer ticker.Stop()
	flush := func() bool {
		if s.silent.Load() {
			s.take() // lost in the stuck connection
			return true
		}
		for _, frame := range s.take() {
			if err := rw.WriteRecord(frame); err != nil {
				m.logf("mesostest: stream %s: %v", s.id, err)
				return false
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	for {
		if !flush() {
			return
		}
		select {
		case <-s.notify:
		case <-ticker.C:
			s.push(hb)
		case <-s.closing:
			flush()
			return
		case <-ctx.Done():
			return
		case <-m.done:
			return
		}
	}
}

// StallSubscription makes the current subscription stream of a framework
// go silent, as a stuck connection or proxy would: it stays open and the
// master still considers the framework subscribed (its calls succeed), but
// nothing more, not even a heartbeat, reaches the scheduler. A scheduler
// must notice the missing heartbeats and subscribe again.
func (m *Master) StallSubscription(frameworkID string) error {
	m.mu.Lock()
	defer m.unlock()
	fw := m.frameworks[frameworkID]
	if fw == nil || fw.stream == nil {
		return fmt.Errorf("mesostest: stalling framework %s: not subscribed", frameworkID)
	}
	fw.stream.silent.Store(true)
	m.logf("mesostest: subscription of framework %s stalled", frameworkID)
	return nil
}

// DropSubscriptionSilently makes the connection of a framework's
// subscription half-open: the master drops the subscription as if the
// connection had closed (the framework is disconnected, its failover
// timeout starts, its calls get 403) but the scheduler's end is never
// told: no FIN, no RST, no more bytes. A scheduler must notice the missing
// heartbeats and subscribe again.
func (m *Master) DropSubscriptionSilently(frameworkID string) error {
	m.mu.Lock()
	defer m.unlock()
	fw := m.frameworks[frameworkID]
	if fw == nil || fw.stream == nil {
		return fmt.Errorf("mesostest: dropping the subscription of framework %s: not subscribed", frameworkID)
	}
	fw.stream.silent.Store(true)
	m.logf("mesostest: subscription of framework %s dropped without closing its connection", frameworkID)
	m.disconnectLocked(fw)
	return nil
}
