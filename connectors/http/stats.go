package http

import (
	"sync"
	"sync/atomic"
)

// Stats counts what a connector's instances did; it is safe for
// concurrent use and may be shared by a source and a sink.
type Stats struct {
	// Requests counts requests received (source) or sent (sink, every
	// attempt).
	Requests atomic.Int64
	// Accepted counts source requests answered 2xx.
	Accepted atomic.Int64
	// Unauthorized counts requests refused 401.
	Unauthorized atomic.Int64
	// BadRequests counts requests refused 400, 405, 413 or 415.
	BadRequests atomic.Int64
	// Throttled counts requests answered 429 (queue full) or 503
	// (shutting down).
	Throttled atomic.Int64
	// Queued is the number of requests waiting for Poll now (the queue
	// is full at SourceConfig.QueueRequests).
	Queued atomic.Int64
	// Duplicates counts requests whose Idempotency-Key was seen before.
	Duplicates atomic.Int64
	// Records and Bytes count records produced (source) or delivered
	// (sink) and their value bytes.
	Records, Bytes atomic.Int64
	// Retries counts sink attempts after the first of a batch.
	Retries atomic.Int64
	// DeadLetters counts records the sink sent to its dead-letter stream.
	DeadLetters atomic.Int64
	// Failures counts sink batches that failed MaxAttempts times.
	Failures atomic.Int64

	mu    sync.Mutex
	addrs map[int]string
}

// Addr returns the address source instance index listens on ("" before it
// does).
func (s *Stats) Addr(index int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrs[index]
}

func (s *Stats) setAddr(index int, addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addrs == nil {
		s.addrs = map[int]string{}
	}
	s.addrs[index] = addr
}
