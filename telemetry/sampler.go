package telemetry

import (
	"sync"
	"sync/atomic"
)

// sampler makes the sampling decisions: one counter per source operator,
// so that exactly one record in N of each operator's records (on this
// node) starts a trace, the first one included. Source instances reserve
// their records from the counter in blocks (reserve); a reservation is a
// scan of the (few) source operators' names, an atomic add and a
// division, and never allocates once the operator has a counter.
type sampler struct {
	every     uint64            // global rate; 0: off
	overrides map[string]uint64 // per operator; immutable
	off       bool              // nothing ever sampled

	counters atomic.Pointer[[]*counter] // copy on write
	mu       sync.Mutex                 // serialises writers of counters
}

// counter counts one operator's records. It is padded to a cache line so
// that the counters of busy sources on different cores do not share one.
type counter struct {
	n     atomic.Uint64
	every uint64
	name  string
	_     [32]byte
}

func newSampler(s Sampling) *sampler {
	sm := &sampler{every: uint64(s.Every), off: s.off(), overrides: map[string]uint64{}}
	for name, n := range s.Operators {
		sm.overrides[name] = uint64(n)
	}
	sm.counters.Store(&[]*counter{})
	return sm
}

// reserve reserves operator's next n records and returns the offset
// among them of the first that starts a trace and the distance between
// those that do (every 0: none does; first may be ≥ n). Safe for
// concurrent use.
func (s *sampler) reserve(operator string, n int) (first, every int) {
	if s.off || n <= 0 {
		return 0, 0
	}
	// A source passes the same string each time, so that the comparison
	// that matches is a pointer comparison; a node has few sources.
	var c *counter
	for _, x := range *s.counters.Load() {
		if x.name == operator {
			c = x
			break
		}
	}
	if c == nil {
		c = s.add(operator)
	}
	if c.every == 0 {
		return 0, 0
	}
	base := c.n.Add(uint64(n)) - uint64(n)
	return int((c.every - base%c.every) % c.every), int(c.every)
}

// add creates operator's counter (once).
func (s *sampler) add(operator string) *counter {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.counters.Load()
	for _, c := range old {
		if c.name == operator {
			return c
		}
	}
	every, ok := s.overrides[operator]
	if !ok {
		every = s.every
	}
	c := &counter{every: every, name: operator}
	next := append(old[:len(old):len(old)], c)
	s.counters.Store(&next)
	return c
}
