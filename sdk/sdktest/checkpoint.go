package sdktest

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// Checkpoints, as the runtime takes them under exactly-once (see the
// package documentation for the order of calls).

// Snapshot is what a checkpoint keeps of one instance: its committed state
// and timers of both kinds per key group, and its watermark. New restores
// one (WithSnapshot), as an instance restores its key groups from a
// checkpoint, possibly one taken at another parallelism.
type Snapshot struct {
	// ID is the checkpoint's id.
	ID      uint64
	state   map[int]map[string][]byte
	timers  map[int]map[string]time.Time
	etimers map[int]map[string]time.Time
	wm      time.Time
}

// Entries returns the snapshot's state entries, in order of key group,
// then key.
func (s Snapshot) Entries() []Entry {
	m := groupMap[[]byte]{data: s.state}
	return entries(&m)
}

// WithParallelism overrides the operator's Metadata.Parallelism: with
// WithSnapshot, the harness is an instance of an operator rescaled after
// the checkpoint.
func WithParallelism(n int) Option { return func(o *options) { o.par = n } }

// WithSnapshot makes New start the instance from checkpoint snapshots (of
// one checkpoint; several if it had several instances, as Graph.Snapshot
// or each instance's Harness.Snapshot return): the harness takes their
// state and timers of the key groups it owns, and its watermark is the
// smallest of theirs; then the operator's Init runs, then Commit with the
// checkpoint's id if the operator is an sdk.Committer, as after the
// runtime restores an instance.
func WithSnapshot(snaps ...Snapshot) Option {
	return func(o *options) { o.restore = append(o.restore, snaps...) }
}

// restoreSnapshots takes the state and timers of the key groups h owns
// from snaps and returns their checkpoint's id (0 without any).
func (h *Harness) restoreSnapshots(snaps []Snapshot) (uint64, error) {
	if len(snaps) == 0 {
		return 0, nil
	}
	id := snaps[0].ID
	for k, s := range snaps {
		if s.ID != id {
			return 0, fmt.Errorf("sdktest: operator %q: snapshots of checkpoints %d and %d given", h.meta.Name, id, s.ID)
		}
		for g := h.info.FirstGroup; g < h.info.EndGroup; g++ {
			if kv := s.state[g]; kv != nil {
				h.state.data[g] = maps.Clone(kv)
			}
			if kv := s.timers[g]; kv != nil {
				h.timers.data[g] = maps.Clone(kv)
			}
			if kv := s.etimers[g]; kv != nil {
				h.etimers.data[g] = maps.Clone(kv)
			}
		}
		if k == 0 || s.wm.Before(h.wm) {
			h.wm = s.wm
		}
	}
	h.lastID = id
	h.checkpoints[id] = h.snapshot(id)
	return id, nil
}

// Snapshot returns checkpoint id's snapshot of the instance, taken by
// Checkpoint, for WithSnapshot.
func (h *Harness) Snapshot(id uint64) (Snapshot, bool) {
	s, ok := h.checkpoints[id]
	if !ok {
		return Snapshot{}, false
	}
	return *s, true
}

// Checkpoint takes checkpoint id at this point of the input, as the
// runtime does when barrier id has arrived on every input (or, for a
// source, when the checkpoint is triggered): an sdk.Committer's PreCommit
// runs (in the instance's first key group), then the committed state and
// timers and the watermark are the checkpoint's snapshot. A PreCommit
// that fails has no effect and fails the checkpoint: no snapshot is
// taken, the operator is not restarted, and the error is returned. Ids
// must increase, across restores too, as the runtime's do.
func (h *Harness) Checkpoint(id uint64) error {
	if id <= h.lastID {
		return fmt.Errorf("sdktest: operator %q: checkpoint %d is not after checkpoint %d", h.meta.Name, id, h.lastID)
	}
	h.lastID = id
	if c, ok := h.op.(sdk.Committer); ok {
		err := h.try(h.info.FirstGroup, time.Time{}, func() error { return c.PreCommit(h.context(), id) })
		if err != nil {
			return fmt.Errorf("sdktest: operator %q: checkpoint %d: pre-commit: %w", h.meta.Name, id, err)
		}
	}
	h.checkpoints[id] = h.snapshot(id)
	return nil
}

// snapshot copies the committed state, timers and watermark.
func (h *Harness) snapshot(id uint64) *Snapshot {
	return &Snapshot{ID: id, state: cloneGroups(h.state.data), timers: cloneGroups(h.timers.data),
		etimers: cloneGroups(h.etimers.data), wm: h.wm}
}

// Complete tells the instance that checkpoint id is complete (stored for
// every instance of every operator): an sdk.Committer's Commit runs (in
// the instance's first key group). A Commit that fails has no effect and
// its error is returned; the operator is not restarted (the runtime logs
// it and calls Commit again at the next completion).
func (h *Harness) Complete(id uint64) error {
	if _, ok := h.checkpoints[id]; !ok {
		return fmt.Errorf("sdktest: operator %q: complete checkpoint %d: not taken", h.meta.Name, id)
	}
	h.completed = max(h.completed, id)
	return h.commit(id)
}

// commit calls an sdk.Committer's Commit for checkpoint id.
func (h *Harness) commit(id uint64) error {
	c, ok := h.op.(sdk.Committer)
	if !ok {
		return nil
	}
	err := h.try(h.info.FirstGroup, time.Time{}, func() error { return c.Commit(h.context(), id) })
	if err != nil {
		return fmt.Errorf("sdktest: operator %q: commit checkpoint %d: %w", h.meta.Name, id, err)
	}
	return nil
}

// Restore rolls the instance back to checkpoint id, as the runtime's
// rollback after a crash elsewhere does: the operator is closed (an
// sdk.Closer's Close), every state write and timer change since the
// snapshot is discarded and the snapshot's state, timers and watermark
// restored, a fresh operator from the factory is initialised (Init), and
// an sdk.Committer commits checkpoint id again (Commit; it must be
// idempotent). id 0 restores the empty state of a start without a
// checkpoint (no Commit). The records produced before stay in Output: the
// test takes what it compares. End of input and end of stream are
// forgotten: a restored source polls again from its position in State.
func (h *Harness) Restore(id uint64) error {
	if c, ok := h.op.(sdk.Closer); ok {
		_ = call(func() error { return c.Close(h.context()) })
	}
	return h.restore(id)
}

// Crash is Restore after the process died: the operator is dropped without
// Close (what it left behind outside, such as a file in progress, stays
// as it was), then the instance restarts from checkpoint id. The dropped
// operator is closed by Close, when the test is done, to release its
// resources.
func (h *Harness) Crash(id uint64) error {
	h.dead = append(h.dead, h.op)
	return h.restore(id)
}

// Rollback restores the newest checkpoint Complete was called for (0, the
// empty state, if none; see Restore), as a crash of any node does to
// every instance: everything since that checkpoint is discarded.
func (h *Harness) Rollback() error { return h.Restore(h.completed) }

func (h *Harness) restore(id uint64) error {
	if h.closed {
		return fmt.Errorf("sdktest: operator %q: harness closed", h.meta.Name)
	}
	snap := &Snapshot{}
	if id > 0 {
		var ok bool
		if snap, ok = h.checkpoints[id]; !ok {
			return fmt.Errorf("sdktest: operator %q: restore checkpoint %d: not taken", h.meta.Name, id)
		}
	}
	h.state = groupMap[[]byte]{data: cloneGroups(snap.state)}
	h.timers = groupMap[time.Time]{data: cloneGroups(snap.timers)}
	h.etimers = groupMap[time.Time]{data: cloneGroups(snap.etimers)}
	h.wm, h.maxEvent = snap.wm, time.Time{}
	h.ended, h.finished = false, false
	h.lastID = max(h.lastID, id)
	h.op = h.factory()
	if err := h.attempt(h.info.FirstGroup, time.Time{}, func() error { return h.op.Init(h.context()) }); err != nil {
		return fmt.Errorf("sdktest: operator %q: init after restoring checkpoint %d: %w", h.meta.Name, id, err)
	}
	if id == 0 {
		return nil
	}
	return h.commit(id)
}

// Flush calls an sdk.Flusher's Flush, as the runtime does before each
// commit of the instance's state (every commit interval, and before a
// stop) under the guarantees other than exactly-once. Its error is
// returned; nothing is rolled back (the runtime retries at the next
// commit).
func (h *Harness) Flush() error {
	f, ok := h.op.(sdk.Flusher)
	if !ok {
		return nil
	}
	h.group, h.event = h.info.FirstGroup, time.Time{}
	if err := call(func() error { return f.Flush(h.context()) }); err != nil {
		return fmt.Errorf("sdktest: operator %q: flush: %w", h.meta.Name, err)
	}
	return nil
}

// cloneGroups copies a groupMap's data.
func cloneGroups[V any](data map[int]map[string]V) map[int]map[string]V {
	out := make(map[int]map[string]V, len(data))
	for g, kv := range data {
		out[g] = maps.Clone(kv)
	}
	return out
}

// Checkpoint takes checkpoint id in every instance, operator by operator
// in stream order (as barriers travel); everything in flight was
// delivered before. The first failure is returned (the other instances
// have taken theirs).
func (g *Graph) Checkpoint(id uint64) error {
	return g.eachAll(func(h *Harness) error { return h.Checkpoint(id) })
}

// Complete completes checkpoint id in every instance (see
// Harness.Complete), returning every failure.
func (g *Graph) Complete(id uint64) error {
	return g.eachAll(func(h *Harness) error { return h.Complete(id) })
}

// Restore rolls every instance back to checkpoint id (see
// Harness.Restore), returning every failure.
func (g *Graph) Restore(id uint64) error {
	g.wm = time.Time{} // the sources' watermarks are the snapshots' again
	return g.eachAll(func(h *Harness) error { return h.Restore(id) })
}

// Snapshot returns the snapshots of checkpoint id of every instance of op
// (for WithSnapshot), or false if any has none.
func (g *Graph) Snapshot(op string, id uint64) ([]Snapshot, bool) {
	o := g.byName[op]
	if o == nil {
		return nil, false
	}
	var out []Snapshot
	for _, h := range o.insts {
		s, ok := h.Snapshot(id)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// eachAll runs fn on every instance in stream order, collecting what they
// produce, then runs the graph; it returns every error.
func (g *Graph) eachAll(fn func(*Harness) error) error {
	var errs []error
	for _, op := range g.ops {
		for _, h := range op.insts {
			if err := fn(h); err != nil {
				errs = append(errs, fmt.Errorf("operator %q instance %d: %w", op.meta.Name, h.info.Index, err))
			}
			g.collect(h)
		}
	}
	if err := g.run(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
