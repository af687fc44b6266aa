package actors

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/core"
)

// Records produced to a stream that no operator reads at that moment (the
// reader is not deployed yet, or was killed) have no destination. What
// happens to them depends on the guarantee:
//
//   - without durability tracking (Config.AtLeastOnce off) they are dropped,
//     counted per stream (StreamStatus.Dropped) and logged at most once a
//     second per stream;
//   - with it, the producer holds them, in order, until a reader appears
//     and then delivers them first; once it holds BufferBatches×BatchSize
//     records it takes no more input (a source is not polled), like a
//     destination without credit. A replayable source's position therefore
//     never becomes durable past a record no reader received. The held
//     count is StreamStatus.Held.
//
// Dead-letter streams are the exception in both modes: a dead letter with
// no reader is dropped, counted and logged as an error, because a poison
// record must not stall the pipeline it was taken out of.

// StreamStatus counts the records of one stream that had no reader when
// they were produced on this node.
type StreamStatus struct {
	// Stream is the stream's name.
	Stream string `json:"stream"`
	// Dropped counts records produced to the stream while no operator read
	// it and that were therefore discarded (see the package comment on
	// unread streams), since the node started.
	Dropped int64 `json:"dropped"`
	// Held is the number of records producers on this node hold now,
	// waiting for an operator to read the stream.
	Held int64 `json:"held"`
}

// streamCounter is the accounting of one stream.
type streamCounter struct {
	dropped atomic.Int64
	held    atomic.Int64

	mu       sync.Mutex // guards the log rate limit
	unlogged int64
	nextLog  time.Time
}

// streamStats is the node's per-stream accounting of unread records. It is
// safe for concurrent use.
type streamStats struct {
	mu sync.Mutex
	m  map[string]*streamCounter
}

// counter returns the counter of stream, creating it.
func (s *streamStats) counter(stream string) *streamCounter {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]*streamCounter)
	}
	c := s.m[stream]
	if c == nil {
		c = new(streamCounter)
		s.m[stream] = c
	}
	return c
}

// snapshot returns the counts of every stream that ever had an unread
// record here, sorted by name.
func (s *streamStats) snapshot() []StreamStatus {
	s.mu.Lock()
	out := make([]StreamStatus, 0, len(s.m))
	for name, c := range s.m {
		out = append(out, StreamStatus{Stream: name, Dropped: c.dropped.Load(), Held: c.held.Load()})
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b StreamStatus) int { return strings.Compare(a.Stream, b.Stream) })
	return out
}

// dropped counts n records of stream dropped for want of a reader, and logs
// it (at most once a second per stream, with the count since the last line).
func (n *Node) dropped(stream string, count int) {
	c := n.streams.counter(stream)
	c.dropped.Add(int64(count))
	c.mu.Lock()
	c.unlogged += int64(count)
	now := time.Now()
	if now.Before(c.nextLog) {
		c.mu.Unlock()
		return
	}
	c.nextLog = now.Add(time.Second)
	k := c.unlogged
	c.unlogged = 0
	c.mu.Unlock()
	level, msg := slog.LevelWarn, "records dropped: no operator reads the stream"
	if core.IsDeadLetterStream(stream) {
		level, msg = slog.LevelError, "dead letters dropped: no operator reads the dead-letter stream"
	}
	n.log.Log(nil, level, msg, "stream", stream, "dropped_since_last_log", k, "dropped_total", c.dropped.Load())
}

// Streams returns, for every stream that had records with no reader on
// this node, how many were dropped and how many are held now.
func (n *Node) Streams() []StreamStatus { return n.streams.snapshot() }
