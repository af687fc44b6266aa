package persistence

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Store is one operator instance's view of the DB: state and timers of the
// operator's key groups, with an overlay of uncommitted writes, a bounded
// read cache and an undo log for the current attempt.
//
// A Store is not safe for concurrent use: it belongs to one instance and is
// used only from that instance's goroutine (CommitAsync's goroutine touches
// only the batch it is given).
type Store struct {
	db     *DB
	prefix []byte

	slots map[string]*slot // known keys: uncommitted writes and cached reads
	last  *slot            // the slot get or write used last, while in slots
	dirty []*slot          // slots written since the last commit (may repeat)
	// byGroup indexes dirty[:indexed] by key group and class (the 3 bytes
	// after prefix), so that a scan reads its own group's writes only, not
	// every write since the last commit (q11's session windows scan a key's
	// sessions per record: 84% of their CPU went to that filter).
	byGroup  map[string][]*slot
	indexed  int
	undo     []undoEntry // changes made by the current attempt
	buf      []byte      // scratch for building keys
	inflight *inflight   // the commit CommitAsync started, until Wait
}

// slot is the latest known value of one full key. A nil value means the key
// is absent (deleted, or known to be missing from Pebble).
type slot struct {
	key    string
	value  []byte
	dirty  bool // written since the last commit
	pinned bool // in the commit in flight: stays cached until it lands
}

// inflight is a commit applied by a goroutine of its own (CommitAsync).
type inflight struct {
	done  chan struct{} // closed when it landed or failed
	err   error         // set before done is closed
	slots []*slot       // what it writes
}

// undoEntry restores a slot to what it held before a write.
type undoEntry struct {
	s         *slot
	prevValue []byte
	prevDirty bool
	created   bool // the slot was added by the write
}

// NewStore returns a Store for operator op.
func (db *DB) NewStore(op string) *Store {
	return &Store{
		db:     db,
		prefix: operatorPrefix(op),
		slots:  make(map[string]*slot),
	}
}

// key builds the full key into s.buf and returns it; valid until the next call.
func (s *Store) key(kg int, class byte, k []byte) []byte {
	b := append(s.buf[:0], s.prefix...)
	b = appendGroup(b, kg)
	b = append(b, class)
	b = append(b, k...)
	s.buf = b
	return b
}

// Get returns the value of state key k in key group kg. found is false when
// there is none. The returned slice must not be modified.
func (s *Store) Get(kg int, k []byte) (value []byte, found bool, err error) {
	return s.get(s.key(kg, ClassState, k))
}

func (s *Store) get(full []byte) ([]byte, bool, error) {
	if sl := s.slots[string(full)]; sl != nil {
		s.last = sl
		return sl.value, sl.value != nil, nil
	}
	v, found, err := s.db.get(full)
	if err != nil {
		return nil, false, fmt.Errorf("persistence: get: %w", err)
	}
	s.last = s.add(string(full), v) // nil remembers absence
	return v, found, nil
}

// add inserts a clean slot, first making room if the cache is full.
func (s *Store) add(key string, v []byte) *slot {
	if len(s.slots) >= s.db.opts.StoreCacheEntries {
		s.evict()
	}
	sl := &slot{key: key, value: v}
	s.slots[key] = sl
	return sl
}

// evict drops clean slots (in map order, which is random) until the cache
// is at three quarters of its limit or only uncommitted writes are left.
// It does nothing while fewer than a quarter of the limit are clean:
// uncommitted writes must stay until the next commit, and scanning for a
// few clean slots on every new key would make a large batch of writes
// quadratic. So a pass removes at least a quarter of the limit, and the
// cache may exceed its limit by the uncommitted writes.
func (s *Store) evict() {
	capacity := s.db.opts.StoreCacheEntries
	target := capacity * 3 / 4
	busy := len(s.dirty) // ≥ the number of dirty slots
	if f := s.inflight; f != nil {
		busy += len(f.slots)
	}
	if len(s.slots)-busy < capacity/4 {
		return
	}
	s.last = nil
	for k, sl := range s.slots {
		if len(s.slots) <= target {
			return
		}
		if !sl.dirty && !sl.pinned {
			delete(s.slots, k)
		}
	}
}

// Set stores a copy of value under state key k in key group kg.
func (s *Store) Set(kg int, k, value []byte) {
	v := make([]byte, len(value)) // non-nil even when empty: nil means absent
	copy(v, value)
	s.write(s.key(kg, ClassState, k), v)
}

// SetOwned is Set without the copy: the Store keeps value, which the
// caller must not modify afterwards.
func (s *Store) SetOwned(kg int, k, value []byte) {
	if value == nil {
		value = []byte{} // nil means absent
	}
	s.write(s.key(kg, ClassState, k), value)
}

// Delete removes state key k from key group kg.
func (s *Store) Delete(kg int, k []byte) {
	s.write(s.key(kg, ClassState, k), nil)
}

// write records value (nil: deletion) for full.
//
// A read-modify-write (Get, then Set of the same key) finds the slot as
// s.last, sparing a second lookup in the map.
func (s *Store) write(full []byte, value []byte) {
	sl := s.last
	if sl == nil || sl.key != string(full) {
		sl = s.slots[string(full)]
	}
	created := sl == nil
	if created {
		sl = s.add(string(full), nil)
	}
	s.last = sl
	s.undo = append(s.undo, undoEntry{s: sl, prevValue: sl.value, prevDirty: sl.dirty, created: created})
	sl.value = value
	if !sl.dirty {
		sl.dirty = true
		s.dirty = append(s.dirty, sl)
	}
}

// Scan calls fn for every state key starting with prefix in key groups
// [first, end), in order of key group then key, seeing uncommitted writes.
// The slices passed to fn are valid only during the call.
func (s *Store) Scan(first, end int, prefix []byte, fn func(kg int, key, value []byte) error) error {
	for kg := first; kg < end; kg++ {
		if err := s.scanGroup(kg, ClassState, prefix, fn); err != nil {
			return err
		}
	}
	return nil
}

// scanGroup merges the committed keys of one key group and class with the
// dirty overlay.
func (s *Store) scanGroup(kg int, class byte, prefix []byte, fn func(kg int, key, value []byte) error) error {
	// What a commit in flight writes must be in Pebble, or (if it failed)
	// dirty again and so in the overlay. Its error is not kept: the next
	// commit writes those slots again and reports its own.
	_ = s.Wait()
	lo := append([]byte(nil), s.key(kg, class, prefix)...)
	hi := prefixEnd(lo)
	// Collect the uncommitted writes in range, sorted.
	var over []*slot
	for _, sl := range s.dirtyIn(string(lo[len(s.prefix) : len(s.prefix)+3])) {
		if sl.dirty && sl.key >= string(lo) && (hi == nil || sl.key < string(hi)) {
			over = append(over, sl)
		}
	}
	slices.SortFunc(over, func(a, b *slot) int { return strings.Compare(a.key, b.key) })
	over = slices.CompactFunc(over, func(a, b *slot) bool { return a == b })
	strip := len(s.prefix) + 3
	emit := func(sl *slot) error {
		if sl.value == nil {
			return nil
		}
		return fn(kg, []byte(sl.key[strip:]), sl.value)
	}
	i := 0
	err := s.db.iterate(lo, hi, func(k, v []byte) error {
		for i < len(over) && over[i].key < string(k) {
			if err := emit(over[i]); err != nil {
				return err
			}
			i++
		}
		if i < len(over) && over[i].key == string(k) {
			i++
			return emit(over[i-1])
		}
		return fn(kg, k[strip:], v)
	})
	if err != nil {
		return fmt.Errorf("persistence: scan: %w", err)
	}
	for ; i < len(over); i++ {
		if err := emit(over[i]); err != nil {
			return err
		}
	}
	return nil
}

// dirtyIn returns the slots of the dirty list in group (a key group and
// class as s.key encodes them), indexing the ones written since the last
// call; they may repeat, and include slots no longer dirty (an undone
// write), as the dirty list does.
func (s *Store) dirtyIn(group string) []*slot {
	if s.byGroup == nil {
		s.byGroup = make(map[string][]*slot)
	}
	strip := len(s.prefix) + 3
	for _, sl := range s.dirty[s.indexed:] {
		if len(sl.key) >= strip {
			g := sl.key[len(s.prefix):strip]
			s.byGroup[g] = append(s.byGroup[g], sl)
		}
	}
	s.indexed = len(s.dirty)
	return s.byGroup[group]
}

// clearDirty empties the dirty list and its index.
func (s *Store) clearDirty() {
	clear(s.dirty)
	s.dirty = s.dirty[:0]
	clear(s.byGroup)
	s.indexed = 0
}

// prefixEnd returns the smallest key greater than every key with prefix p, or
// nil if there is none.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// GetMeta returns the runtime's value name in key group kg.
func (s *Store) GetMeta(kg int, name string) ([]byte, bool, error) {
	return s.get(s.key(kg, ClassMeta, []byte(name)))
}

// SetMeta stores the runtime's value name in key group kg.
func (s *Store) SetMeta(kg int, name string, value []byte) {
	s.write(s.key(kg, ClassMeta, []byte(name)), bytes.Clone(value))
}

// Timer is a stored timer.
type Timer struct {
	Group int
	Key   string
	At    time.Time
}

// SetTimer stores a processing-time timer in key group kg.
func (s *Store) SetTimer(kg int, key string, at time.Time) { s.setTimer(ClassTimer, kg, key, at) }

// DeleteTimer removes a stored processing-time timer from key group kg.
func (s *Store) DeleteTimer(kg int, key string) {
	s.write(s.key(kg, ClassTimer, []byte(key)), nil)
}

// Timers returns every processing-time timer stored in key groups
// [first, end), including uncommitted ones.
func (s *Store) Timers(first, end int) ([]Timer, error) { return s.timers(ClassTimer, first, end) }

// SetEventTimer stores an event-time timer in key group kg.
func (s *Store) SetEventTimer(kg int, key string, at time.Time) {
	s.setTimer(ClassEventTimer, kg, key, at)
}

// DeleteEventTimer removes a stored event-time timer from key group kg.
func (s *Store) DeleteEventTimer(kg int, key string) {
	s.write(s.key(kg, ClassEventTimer, []byte(key)), nil)
}

// EventTimers returns every event-time timer stored in key groups
// [first, end), including uncommitted ones.
func (s *Store) EventTimers(first, end int) ([]Timer, error) {
	return s.timers(ClassEventTimer, first, end)
}

// setTimer stores a timer of class in key group kg: its due time in
// nanoseconds, big-endian.
func (s *Store) setTimer(class byte, kg int, key string, at time.Time) {
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], uint64(at.UnixNano()))
	s.write(s.key(kg, class, []byte(key)), v[:])
}

// timers returns the timers of class in key groups [first, end).
func (s *Store) timers(class byte, first, end int) ([]Timer, error) {
	var out []Timer
	for kg := first; kg < end; kg++ {
		err := s.scanGroup(kg, class, nil, func(kg int, key, value []byte) error {
			if len(value) != 8 {
				return fmt.Errorf("persistence: timer %q in key group %d has a %d-byte value, want 8", key, kg, len(value))
			}
			out = append(out, Timer{Group: kg, Key: string(key), At: time.Unix(0, int64(binary.BigEndian.Uint64(value)))})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Begin starts a new attempt: writes from here on can be undone by Rollback.
func (s *Store) Begin() { s.undo = s.undo[:0] }

// Rollback undoes the writes made since Begin.
func (s *Store) Rollback() {
	s.last = nil // it may be a slot created by the attempt
	for i := len(s.undo) - 1; i >= 0; i-- {
		u := s.undo[i]
		u.s.value, u.s.dirty = u.prevValue, u.prevDirty
		if u.created {
			delete(s.slots, u.s.key)
		}
	}
	clear(s.undo)
	s.undo = s.undo[:0]
}

// Pending returns the number of uncommitted writes.
func (s *Store) Pending() int {
	n := 0
	for _, sl := range s.dirty {
		if sl.dirty {
			n++
		}
	}
	return n
}

// Commit writes the overlay to Pebble in one batch, waiting for the WAL sync
// when sync is true. It also ends the current attempt (as Begin does).
func (s *Store) Commit(sync bool) error {
	return s.commit(sync, nil)
}

// CommitLogged is Commit that also appends every committed write to *log
// (a nil Value for a deletion), for a state log.
func (s *Store) CommitLogged(sync bool, log *[]KV) error {
	return s.commit(sync, log)
}

func (s *Store) commit(sync bool, log *[]KV) error {
	if err := s.Wait(); err != nil && s.db.Failed() != nil {
		return err // else its writes are dirty again, and go in this batch
	}
	clear(s.undo)
	s.undo = s.undo[:0]
	if len(s.dirty) == 0 {
		return nil
	}
	mark := 0
	if log != nil {
		mark = len(*log)
	}
	b, n, err := s.batch(func(sl *slot) {
		if log != nil {
			*log = append(*log, KV{Key: []byte(sl.key), Value: sl.value})
		}
	})
	if err != nil {
		if log != nil {
			*log = (*log)[:mark]
		}
		return err
	}
	defer b.Close()
	if err := s.db.commit(b, sync); err != nil {
		s.redirty()
		if log != nil {
			*log = (*log)[:mark]
		}
		return fmt.Errorf("persistence: commit %d writes: %w", n, err)
	}
	s.clearDirty()
	if len(s.slots) > s.db.opts.StoreCacheEntries {
		s.evict()
	}
	return nil
}

// batch writes the dirty slots into a new batch and marks them clean,
// calling each for every slot written; on an error they are dirty again.
func (s *Store) batch(each func(*slot)) (*pebble.Batch, int, error) {
	b := s.db.pdb.NewBatch()
	n := 0
	for _, sl := range s.dirty {
		if !sl.dirty {
			continue // rolled back, or listed twice
		}
		var err error
		if sl.value == nil {
			err = b.Delete([]byte(sl.key), nil)
		} else {
			err = b.Set([]byte(sl.key), sl.value, nil)
		}
		if err != nil {
			_ = b.Close()
			s.redirty()
			return nil, 0, fmt.Errorf("persistence: commit: %w", err)
		}
		sl.dirty = false
		n++
		each(sl)
	}
	return b, n, nil
}

// redirty marks every slot of the dirty list as still to be written.
func (s *Store) redirty() {
	for _, sl := range s.dirty {
		sl.dirty = true
	}
}

// CommitAsync is Commit without waiting for Pebble: a goroutine applies
// the batch (and waits for the WAL sync when sync is true) while the Store
// goes on, serving the batch's writes from its cache. Scans, DropCache,
// Discard and the next commit wait for it first; Wait waits for it and
// reports its error, after which its writes are uncommitted again. It
// ends the current attempt, as Commit does. It returns the error of the
// previous asynchronous commit, whose writes this one retries, or of
// building the batch.
//
// Whoever reads this Store's key groups from Pebble directly (a handoff,
// a checkpoint copy) must see a synchronous Commit first.
func (s *Store) CommitAsync(sync bool) error {
	prev := s.Wait()
	if prev != nil && s.db.Failed() != nil {
		return prev
	}
	clear(s.undo)
	s.undo = s.undo[:0]
	if len(s.dirty) == 0 {
		return prev
	}
	f := &inflight{done: make(chan struct{}), slots: make([]*slot, 0, len(s.dirty))}
	b, _, err := s.batch(func(sl *slot) { f.slots = append(f.slots, sl) })
	if err != nil {
		return err
	}
	for _, sl := range f.slots {
		sl.pinned = true
	}
	s.clearDirty()
	s.inflight = f
	db := s.db
	go func() {
		defer close(f.done)
		defer b.Close()
		f.err = db.commit(b, sync)
	}()
	return prev
}

// Wait waits for the commit CommitAsync started, if any, and returns its
// error; the writes of a failed one are uncommitted again (unless written
// since), so that the next commit retries them.
func (s *Store) Wait() error {
	f := s.inflight
	if f == nil {
		return nil
	}
	<-f.done
	s.inflight = nil
	for _, sl := range f.slots {
		sl.pinned = false
		if f.err != nil && !sl.dirty {
			sl.dirty = true
			s.dirty = append(s.dirty, sl)
		}
	}
	if f.err != nil {
		return fmt.Errorf("persistence: commit %d writes: %w", len(f.slots), f.err)
	}
	if len(s.slots) > s.db.opts.StoreCacheEntries {
		s.evict()
	}
	return nil
}

// DropCache forgets cached committed values, so later reads go to Pebble.
// Uncommitted writes are kept.
func (s *Store) DropCache() {
	_ = s.Wait() // as in scanGroup
	s.last = nil
	for k, sl := range s.slots {
		if !sl.dirty {
			delete(s.slots, k)
		}
	}
}

// Discard forgets every uncommitted write and cached value, as if the
// Store were new (a rollback restores the committed state instead).
func (s *Store) Discard() {
	_ = s.Wait() // it must not land after whatever replaces the state
	s.last = nil
	clear(s.slots)
	s.clearDirty()
	clear(s.undo)
	s.undo = s.undo[:0]
}
