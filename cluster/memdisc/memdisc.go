package memdisc

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/cluster/internal/snapshot"
)

// Lock order: Discovery.mu before Registry.mu. The Registry never calls
// into a Discovery.

// Registry is an in-process membership table shared by the Discovery
// values made from it. It is safe for concurrent use. The zero value is
// not usable; call NewRegistry.
type Registry struct {
	mu       sync.Mutex
	members  map[string]entry      // by member ID
	watchers map[*watcher]struct{} // open Watch channels
	snap     []cluster.Member      // current snapshot, rebuilt on change
}

// entry is one registered member and the Join that registered it.
type entry struct {
	m     cluster.Member
	owner *Discovery
}

// watcher is one Watch channel. Its sends and its close happen under
// Registry.mu, which makes the registry the channel's single sender.
type watcher struct {
	ch     chan []cluster.Member
	owner  *Discovery
	closed bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		members:  map[string]entry{},
		watchers: map[*watcher]struct{}{},
		snap:     snapshot.Make(nil),
	}
}

// Members returns the current snapshot: alive members sorted by ID.
func (r *Registry) Members() []cluster.Member {
	r.mu.Lock()
	defer r.mu.Unlock()
	return snapshot.Clone(r.snap)
}

// Fail removes member id as if its process had crashed: no Leave, no
// deregistration by the node itself. The node's Discovery keeps running
// (its watchers stay open) but its later Leave is a no-op. Fail reports
// whether id was a member.
func (r *Registry) Fail(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.members[id]; !ok {
		return false
	}
	delete(r.members, id)
	r.changedLocked()
	return true
}

func (r *Registry) add(m cluster.Member, owner *Discovery) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.members[m.ID]; ok {
		return fmt.Errorf("memdisc: join %q: %w", m.ID, cluster.ErrDuplicateID)
	}
	r.members[m.ID] = entry{m: m.Normalize(), owner: owner}
	r.changedLocked()
	return nil
}

// remove deletes id if owner still holds it (it may have been failed and
// re-joined by another node since).
func (r *Registry) remove(id string, owner *Discovery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.members[id]; ok && e.owner == owner {
		delete(r.members, id)
		r.changedLocked()
	}
}

func (r *Registry) changedLocked() {
	r.snap = snapshot.Make(slices.Collect(func(yield func(cluster.Member) bool) {
		for _, e := range r.members {
			if !yield(e.m) {
				return
			}
		}
	}))
	for w := range r.watchers {
		snapshot.Publish(w.ch, r.snap)
	}
}

func (r *Registry) subscribe(owner *Discovery) *watcher {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := &watcher{ch: snapshot.New(), owner: owner}
	r.watchers[w] = struct{}{}
	snapshot.Publish(w.ch, r.snap)
	return w
}

func (r *Registry) unsubscribe(w *watcher) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !w.closed {
		w.closed = true
		delete(r.watchers, w)
		close(w.ch)
	}
}

// unsubscribeAll closes every watcher of owner.
func (r *Registry) unsubscribeAll(owner *Discovery) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range slices.Collect(maps.Keys(r.watchers)) {
		if w.owner == owner && !w.closed {
			w.closed = true
			delete(r.watchers, w)
			close(w.ch)
		}
	}
}

// Discovery is one node's view of a Registry. It implements
// cluster.Discovery; all methods are safe for concurrent use.
type Discovery struct {
	reg *Registry

	mu    sync.Mutex
	state state
	self  string        // member ID once joined
	stops []func() bool // context.AfterFunc stops for Join and Watch contexts
}

type state int

const (
	stateIdle state = iota
	stateJoined
	stateLeft
)

var _ cluster.Discovery = (*Discovery)(nil)

// New returns a Discovery on reg. A nil reg gives the Discovery a private
// registry: the embedded single-node mode.
func New(reg *Registry) *Discovery {
	if reg == nil {
		reg = NewRegistry()
	}
	return &Discovery{reg: reg}
}

// Registry returns the registry d belongs to.
func (d *Discovery) Registry() *Registry { return d.reg }

// Join implements cluster.Discovery. It returns an error wrapping
// cluster.ErrDuplicateID if another node of the registry holds the same
// ID. When ctx ends, the member leaves as with Leave, except that
// watchers stay open until their own context ends.
func (d *Discovery) Join(ctx context.Context, self cluster.Member) error {
	if err := self.Validate(); err != nil {
		return fmt.Errorf("memdisc: join: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch d.state {
	case stateJoined:
		return fmt.Errorf("memdisc: join %q: %w", self.ID, cluster.ErrAlreadyJoined)
	case stateLeft:
		return fmt.Errorf("memdisc: join %q: %w", self.ID, cluster.ErrLeft)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memdisc: join %q: %w", self.ID, err)
	}
	if err := d.reg.add(self, d); err != nil {
		return err
	}
	d.state, d.self = stateJoined, self.ID
	d.stops = append(d.stops, context.AfterFunc(ctx, func() { d.reg.remove(self.ID, d) }))
	return nil
}

// Watch implements cluster.Discovery. The current membership is sent at
// once.
func (d *Discovery) Watch(ctx context.Context) <-chan []cluster.Member {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state == stateLeft {
		ch := snapshot.New()
		close(ch)
		return ch
	}
	w := d.reg.subscribe(d)
	d.stops = append(d.stops, context.AfterFunc(ctx, func() { d.reg.unsubscribe(w) }))
	return w.ch
}

// Leave implements cluster.Discovery. It never fails.
func (d *Discovery) Leave(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state == stateLeft {
		return nil
	}
	if d.state == stateJoined {
		d.reg.remove(d.self, d)
	}
	d.state = stateLeft
	for _, stop := range d.stops {
		stop()
	}
	d.stops = nil
	d.reg.unsubscribeAll(d)
	return nil
}
