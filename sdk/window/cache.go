package window

import (
	"errors"

	"github.com/sluicehq/sluice/sdk"
)

// DefaultCacheWindows is Config.CacheWindows's default: the number of
// entries (a key's time windows, or one count or global window) whose
// accumulators an instance keeps in memory.
const DefaultCacheWindows = 1 << 18

// cache holds decoded state entries of an operator instance (V: a key's
// tumbling or hopping windows, or one count or global window), so that
// adding a record costs a map lookup and an Add instead of a State read
// and a decode. It is write-through: every change is also written to
// State in the same callback, so State stays the truth that commits,
// checkpoints, restores and handoffs see, and the cache never has to be
// flushed. It lives and dies with the operator value: the runtime creates
// a new one (and so a new cache) after a failed attempt, a rollback to a
// checkpoint, a restart and for every instance that takes over key
// groups, and Init fills it from State again.
//
// It is also a negative cache: once Init has loaded the instance's
// entries (State implements sdk.AllGroupsScanner, as the runtime's does),
// an entry missing from it is known to be absent from State, which spares
// the State read that finds nothing for a new window (the costliest part:
// a Pebble lookup). When the cache is full it drops a quarter of its
// entries (they are in State) and remembers their keys as spilled: a miss
// on a spilled key reads State. Spilled keys are forgotten when State is
// read for them; beyond 4 × the limit of them, the cache stops claiming
// absence (every miss reads State), which bounds its memory.
//
// Session windows are not cached (they are found by a prefix scan).
type cache[V any] struct {
	m        map[string]V
	spilled  map[string]struct{} // in State, not in m
	limit    int
	complete bool // every entry in State is in m or spilled
}

// newCache returns an empty cache of limit entries (0: the default),
// which knows nothing about State until load.
func newCache[V any](limit int) *cache[V] {
	if limit <= 0 {
		limit = DefaultCacheWindows
	}
	return &cache[V]{m: make(map[string]V), spilled: make(map[string]struct{}), limit: limit}
}

// load fills the cache with the entries whose state keys start with tag,
// in every key group of the instance, decoding each value with decode
// (its slices are valid only during the call). It does nothing for a
// State that cannot scan every key group (a test double): the cache then
// never claims an entry is absent.
func (c *cache[V]) load(st sdk.State, tag byte, decode func(k, v []byte) (V, error)) error {
	all, ok := st.(sdk.AllGroupsScanner)
	if !ok {
		return nil
	}
	c.complete = true
	err := all.ScanAllGroups([]byte{tag}, func(k, v []byte) error {
		if len(c.m) >= c.limit {
			if c.spill(string(k)); !c.complete {
				return errStopLoad // too many: the rest is read when needed
			}
			return nil
		}
		e, err := decode(k, v)
		if err != nil {
			return err
		}
		c.m[string(k)] = e
		return nil
	})
	if errors.Is(err, errStopLoad) {
		return nil
	}
	return err
}

// errStopLoad ends load's scan early.
var errStopLoad = errors.New("window: stop loading")

// get returns the entry under state key k. known is true when it is
// cached (ok) or known to be absent from State; otherwise the caller
// reads State and then calls put or absent.
func (c *cache[V]) get(k []byte) (e V, ok, known bool) {
	if e, ok = c.m[string(k)]; ok {
		return e, true, true
	}
	if !c.complete {
		return e, false, false
	}
	_, spilled := c.spilled[string(k)]
	return e, false, !spilled
}

// put caches e under k and returns the key as a string (shared with the
// cache's, for a timer key), first making room if the cache is full.
func (c *cache[V]) put(k []byte, e V) string {
	if len(c.m) >= c.limit {
		c.evict()
	}
	s := string(k)
	delete(c.spilled, s)
	c.m[s] = e
	return s
}

// absent notes that State has nothing under k.
func (c *cache[V]) absent(k []byte) { delete(c.spilled, string(k)) }

// remove forgets the entry under k (its state was deleted).
func (c *cache[V]) remove(k []byte) {
	delete(c.m, string(k))
	delete(c.spilled, string(k))
}

// evict drops a quarter of the entries (at least one; they are in State
// already), in map order.
func (c *cache[V]) evict() {
	n := max(len(c.m)/4, 1)
	for k := range c.m {
		if n == 0 {
			break
		}
		delete(c.m, k)
		c.spill(k)
		n--
	}
}

// spill remembers that State holds an entry under k that m does not.
func (c *cache[V]) spill(k string) {
	if !c.complete {
		return
	}
	if len(c.spilled) >= 4*c.limit {
		c.complete = false // too many to remember: misses read State
		clear(c.spilled)
		return
	}
	c.spilled[k] = struct{}{}
}
