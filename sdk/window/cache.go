package window

import (
	"math"
	"slices"

	"github.com/sluicehq/sluice/sdk"
)

// DefaultCacheWindows is Config.CacheWindows's default: the number of
// windows whose accumulators an instance keeps in memory.
const DefaultCacheWindows = 1 << 18

// cache holds decoded accumulators of the windows an operator instance
// owns, so that adding a record costs a map lookup and an Add instead of a
// State read and a decode. It is write-through: every change is also
// written to State in the same callback, so State stays the truth that
// commits, checkpoints, restores and handoffs see, and the cache never
// has to be flushed. It lives and dies with the operator value: the
// runtime creates a new one (and so a new cache) after a failed attempt,
// a rollback to a checkpoint, a restart and for every instance that takes
// over key groups, and Init fills it from State again.
//
// It is also a negative cache: once Init has loaded the instance's
// windows (State implements sdk.AllGroupsScanner, as the runtime's does),
// a window missing from it is known to be absent from State, which spares
// the State read that finds nothing on a window's first record (the
// costliest part: a Pebble lookup). When the cache is full it drops the
// quarter of its windows that end first (they are in State already); a
// later miss on a window ending at or before the latest end dropped reads
// State, the others are still known absent.
//
// Session windows are not cached (they are found by a prefix scan).
type cache[A any] struct {
	m     map[string]*cached[A] // state key → window
	limit int
	// complete: every window in State is in m, except windows ending at
	// or before dropped (Unix ns; windows without an end count as ending
	// at math.MaxInt64).
	complete bool
	dropped  int64
	ends     []int64 // scratch for evict
}

// cached is one window's accumulator; n is a count window's number of
// records.
type cached[A any] struct {
	acc A
	n   int64
	end int64
}

// newCache returns an empty cache of limit windows (0: the default),
// which knows nothing about State until load.
func newCache[A any](limit int) *cache[A] {
	if limit <= 0 {
		limit = DefaultCacheWindows
	}
	return &cache[A]{m: make(map[string]*cached[A]), limit: limit, dropped: math.MaxInt64}
}

// load fills the cache with the windows whose state keys start with tag,
// in every key group of the instance, decoding each value with decode. It
// does nothing for a State that cannot scan every key group (a test
// double): the cache then never claims a window is absent.
func (c *cache[A]) load(st sdk.State, tag byte, decode func(k, v []byte) (*cached[A], error)) error {
	all, ok := st.(sdk.AllGroupsScanner)
	if !ok {
		return nil
	}
	c.complete, c.dropped = true, math.MinInt64
	return all.ScanAllGroups([]byte{tag}, func(k, v []byte) error {
		e, err := decode(k, v)
		if err != nil {
			return err
		}
		if len(c.m) >= c.limit {
			c.dropped = max(c.dropped, e.end)
			return nil
		}
		c.m[string(k)] = e
		return nil
	})
}

// get returns the window under state key k, which ends at end. known is
// true when the window is cached (e != nil) or known to be absent from
// State (e == nil); otherwise the caller reads State.
func (c *cache[A]) get(k []byte, end int64) (e *cached[A], known bool) {
	if e = c.m[string(k)]; e != nil {
		return e, true
	}
	return nil, c.complete && end > c.dropped
}

// put caches e under k and returns the key as a string (shared with the
// cache's, for a timer key), first making room if the cache is full.
func (c *cache[A]) put(k []byte, e *cached[A]) string {
	if len(c.m) >= c.limit {
		c.evict()
	}
	s := string(k)
	c.m[s] = e
	return s
}

// remove forgets the window under k (its state was deleted).
func (c *cache[A]) remove(k []byte) { delete(c.m, string(k)) }

// evict drops the quarter of the windows (at least one) that end first:
// their accumulators are in State already.
func (c *cache[A]) evict() {
	c.ends = c.ends[:0]
	for _, e := range c.m {
		c.ends = append(c.ends, e.end)
	}
	slices.Sort(c.ends)
	cut := c.ends[len(c.ends)/4] // drop windows ending at or before it
	for k, e := range c.m {
		if e.end <= cut {
			delete(c.m, k)
		}
	}
	c.dropped = max(c.dropped, cut)
}
