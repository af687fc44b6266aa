package ckpt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/backoff"
)

// The coordinator: the checkpointer of the member with the lowest id (the
// node itself when embedded) triggers checkpoint N every Interval (from
// the start of the previous one, and at least minPause of the interval
// after it ended), collects every member's part, and writes the
// metadata that completes it; then every node's Committer sinks commit and
// checkpoints beyond the Keep newest are deleted. A checkpoint that does
// not complete within Timeout, or during which the cluster changes, is
// abandoned; failures (the store unreachable) are retried with a growing
// delay. When a member crashes, the coordinator abandons the checkpoint in
// progress and rolls every node back to the newest complete checkpoint in
// a new generation (rollback.go).
//
// Checkpoint ids grow with time (nanoseconds, and at least one more than
// any id seen), so that a new coordinator after a failover continues the
// sequence without agreement; the generation of rollbacks grows by one.

// savepointAttempts is how many checkpoints a savepoint request tries
// before it fails: a cluster that changes (an instance moving, awaiting its
// state) fails a checkpoint without anything being wrong.
const savepointAttempts = 5

// minPause is the part of the interval that separates the end of a
// checkpoint from the start of the next at least: checkpoints start at a
// fixed rate, so that output waits at most an interval plus a
// checkpoint's duration to be committed, but one that took nearly the
// interval or longer does not make them run back to back.
const minPause = 4 // a quarter

// coordRole is the coordinator's state (meaningful while leader).
type coordRole struct {
	leader    bool
	restart   bool   // rolled back because this process replaced a crashed one unseen (RestartReport)
	again     string // why to roll back again once the rollback under way is done (coordOnLostInFlight)
	recording bool   // a rollback's generation is being recorded in the store (recordRollback)
	reported  string // the node that reported that, heard before this node led
	loaded    bool   // the newest complete checkpoint was read from the store
	lastID    uint64
	next      time.Time // when to trigger the next checkpoint
	pending   *pendingCheckpoint
	rollback  *pendingRollback
	delays    *backoff.Backoff // after failures
	requests  []Request        // savepoints asked for

	stats Stats
}

// pendingCheckpoint is a checkpoint in progress.
type pendingCheckpoint struct {
	id         uint64
	gen        uint64 // the rollback generation it was triggered in
	started    time.Time
	savepoint  bool
	topology   int64
	members    []cluster.Member
	waiting    map[string]bool
	parts      []checkpoint.NodePart
	completing bool
	requests   []Request
}

// pendingRollback is a rollback in progress.
type pendingRollback struct {
	gen     uint64
	started time.Time
	target  uint64
	waiting map[string]bool
}

// Stats describes the checkpoints coordinated by a node (only
// the coordinator's are meaningful).
type Stats struct {
	Coordinator bool `json:"coordinator"`
	// Completed and Failed count checkpoints since the node started.
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	// Last is the newest complete checkpoint known (zero: none).
	Last         uint64        `json:"last"`
	LastTime     time.Time     `json:"lastTime"`
	LastDuration time.Duration `json:"lastDuration"`
	LastUploaded int64         `json:"lastUploaded"`
	LastSize     int64         `json:"lastSize"`
	// InProgress is the checkpoint being taken (0: none).
	InProgress uint64 `json:"inProgress,omitempty"`
	// LastError says why the newest failure failed, LastFailure when;
	// ConsecutiveFailures counts failures since the last completion.
	LastError           string    `json:"lastError,omitempty"`
	LastFailure         time.Time `json:"lastFailure,omitzero"`
	ConsecutiveFailures int64     `json:"consecutiveFailures"`
	// LastSavepoint marks Last as a savepoint.
	LastSavepoint bool `json:"lastSavepoint,omitempty"`
	// CoordinatorNode is the node that coordinates, as this node sees the
	// cluster.
	CoordinatorNode string `json:"coordinatorNode,omitempty"`
	// Generation is the rollback generation; Rollbacks counts them.
	Generation uint64 `json:"generation"`
	Rollbacks  int64  `json:"rollbacks"`
}

// Coordinator messages from itself.
type (
	storedMsg struct {
		Meta checkpoint.Meta
		Err  error
	}
	latestMsg struct {
		Meta checkpoint.Meta
		Err  error
	}
)

// leaderOf returns the member that coordinates: the lowest id.
func leaderOf(members []cluster.Member) string {
	if len(members) == 0 {
		return ""
	}
	return slices.MinFunc(members, func(a, b cluster.Member) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	}).ID
}

// coordOnView reacts to a new view as coordinator.
func (c *Checkpointer) coordOnView(old, v View) {
	r := &c.coord
	r.leader = leaderOf(v.Members) == c.id
	if !r.leader {
		c.reportLeaderRestart(v)
		// Even one whose metadata is being stored: the new coordinator may
		// be rolling back past it, so it must not be announced from here.
		// If the write lands, the store holds a checkpoint no node heard
		// of; instances restore from the store's newest (actors.Node.restoreBase),
		// so none restores an older one and undoes what a sink prepared
		// for it.
		if r.pending != nil {
			c.coordAbort("this node no longer coordinates")
		}
		for _, req := range r.requests {
			c.answer(req, Reply{Err: fmt.Errorf("node %s no longer coordinates checkpoints", c.id)})
		}
		r.requests = nil
		return
	}
	if len(v.Crashed) > 0 {
		c.coordRollback(fmt.Sprintf("node(s) %v crashed", v.Crashed))
		return
	}
	if r.reported != "" && !r.restart {
		c.coordRestarted()
		return
	}
	if rb := r.rollback; rb != nil && !sameMembers(old.Members, v.Members) {
		// A node that joined during a rollback may have been handed state
		// from before it: roll everyone back again, the newcomer included.
		c.coordRollback("the membership changed during the rollback")
		return
	}
	// A checkpoint whose metadata is being stored is not abandoned: the
	// store's answer decides, and coordOnStored announces it (a rollback,
	// on this actor too, still aborts it first). Aborted while the write
	// lands, it would be complete in the store and announced to nobody.
	if p := r.pending; p != nil && !p.completing && (v.Topo.Version != p.topology || !sameMembers(v.Members, p.members)) {
		c.coordAbort("the cluster changed during the checkpoint")
	}
}

// coordOnLatest records the newest complete checkpoint read at start.
func (c *Checkpointer) coordOnLatest(m latestMsg) {
	r := &c.coord
	switch {
	case m.Err == nil:
		if c.latest == nil || m.Meta.ID > c.latest.ID {
			meta := m.Meta
			c.latest = &meta
		}
		r.loaded = true
	case errors.Is(m.Err, checkpoint.ErrNotFound):
		r.loaded = true
	default:
		c.log.Warn("reading the newest checkpoint failed; retrying", "error", m.Err)
		c.n.AfterFunc(time.Second, c.loadLatest)
		return
	}
	if c.latest != nil {
		r.lastID = max(r.lastID, c.latest.ID)
		r.stats.Last, r.stats.LastTime = c.latest.ID, c.latest.Completed
	}
}

// tick triggers, times out and retries as coordinator.
func (c *Checkpointer) tick() {
	r := &c.coord
	if !r.leader || !r.loaded {
		return
	}
	now := time.Now()
	if rb := r.rollback; rb != nil {
		if now.Sub(rb.started) > c.cfg.Timeout {
			c.coordRollback(fmt.Sprintf("rollback %d did not finish within %v on %v", rb.gen, c.cfg.Timeout, keys(rb.waiting)))
		}
		return
	}
	if p := r.pending; p != nil {
		if now.Sub(p.started) > c.cfg.Timeout && !p.completing {
			c.coordAbort(fmt.Sprintf("not complete within %v; waiting for %v", c.cfg.Timeout, keys(p.waiting)))
		}
		return
	}
	if now.Before(r.next) && !slices.ContainsFunc(r.requests, func(m Request) bool { return m.failures == 0 }) {
		return // a new savepoint request does not wait
	}
	if len(c.view.Members) == 0 || (len(c.view.Topo.Operators) == 0 && len(r.requests) == 0) {
		return
	}
	c.coordTrigger()
}

// nextStart returns when the checkpoint after one that started at started
// and ended at ended starts: an interval after started, and at least
// interval/minPause after ended.
func nextStart(started, ended time.Time, interval time.Duration) time.Time {
	next := started.Add(interval)
	if pause := ended.Add(interval / minPause); next.Before(pause) {
		return pause
	}
	return next
}

// tickAt makes the coordinator tick at t, so that the next checkpoint
// starts then rather than at the ticker's next beat.
func (c *Checkpointer) tickAt(t time.Time) {
	pid, root := c.self, c.root
	c.n.AfterFunc(time.Until(t), func() { root.Send(pid, tickMsg{}) })
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// coordTrigger starts a checkpoint on every member.
func (c *Checkpointer) coordTrigger() {
	r := &c.coord
	id := max(uint64(time.Now().UnixNano()), r.lastID+1)
	r.lastID = id
	p := &pendingCheckpoint{id: id, gen: c.gen, started: time.Now(), topology: c.view.Topo.Version,
		members: slices.Clone(c.view.Members), waiting: make(map[string]bool), requests: r.requests}
	p.savepoint = len(r.requests) > 0
	r.requests = nil
	r.pending = p
	r.stats.InProgress = id
	trigger := &wire.CheckpointTrigger{Id: id, TopologyVersion: p.topology, Generation: c.gen, Coordinator: c.self, Savepoint: p.savepoint}
	for _, m := range p.members {
		p.waiting[m.ID] = true
		c.root.Send(actor.NewPID(m.Address, checkpointerName), trigger)
	}
}

// coordOnPart records a member's part.
func (c *Checkpointer) coordOnPart(m *wire.CheckpointPart) {
	p := c.coord.pending
	if p == nil || p.id != m.Id {
		return
	}
	// An error counts even from a node whose part came in already: a
	// barrier its instances sent was lost (checkpointer.onLost); not once
	// every part is in (they all got their barriers) and it completes.
	if !p.waiting[m.Node] && (m.Error == "" || p.completing) {
		return
	}
	if m.Error != "" {
		if strings.HasPrefix(m.Error, errGeneration) {
			c.coordRollback(m.Error)
			return
		}
		c.coordAbort(m.Error)
		return
	}
	var part checkpoint.NodePart
	if err := json.Unmarshal(m.Part, &part); err != nil {
		c.coordAbort(fmt.Sprintf("node %s: undecodable part: %v", m.Node, err))
		return
	}
	delete(p.waiting, m.Node)
	p.parts = append(p.parts, part)
	if len(p.waiting) > 0 {
		return
	}
	meta := checkpoint.Meta{ID: p.id, Savepoint: p.savepoint, Started: p.started, Completed: time.Now(),
		TopologyVersion: p.topology, Generation: p.gen, Nodes: p.parts}
	// Every key group of every operator must be in some node's part: an
	// instance that moved to a node outside the checkpoint's members (one
	// that joined meanwhile) is in none, and restoring this checkpoint
	// would empty its groups.
	for _, spec := range c.view.Topo.Operators {
		if !meta.Covers(spec.Meta.Name, 0, spec.Meta.KeyGroups) {
			c.coordAbort(fmt.Sprintf("operator %s's key groups are not all in the checkpoint (an instance moved during it)", spec.Meta.Name))
			return
		}
	}
	p.completing = true
	slices.SortFunc(meta.Nodes, func(a, b checkpoint.NodePart) int {
		if a.Node < b.Node {
			return -1
		}
		if a.Node > b.Node {
			return 1
		}
		return 0
	})
	pid := c.self
	c.n.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
		defer cancel()
		err := c.store.Complete(ctx, meta)
		c.root.Send(pid, storedMsg{Meta: meta, Err: err})
	})
}

// coordOnStored finishes a checkpoint once its metadata is stored.
func (c *Checkpointer) coordOnStored(m storedMsg) {
	r := &c.coord
	p := r.pending
	if p == nil || p.id != m.Meta.ID {
		return
	}
	if m.Err != nil {
		c.coordAbort(storeFailure(m.Err))
		return
	}
	r.pending = nil
	meta := m.Meta
	r.stats.Completed++
	r.stats.ConsecutiveFailures = 0
	r.stats.LastSavepoint = meta.Savepoint
	r.stats.InProgress = 0
	r.stats.Last, r.stats.LastTime, r.stats.LastDuration = meta.ID, meta.Completed, meta.Duration()
	r.stats.LastUploaded, r.stats.LastSize = meta.Uploaded(), meta.Size()
	if r.delays != nil {
		r.delays.Reset()
	}
	r.next = nextStart(p.started, time.Now(), c.cfg.Interval)
	c.tickAt(r.next)
	b, err := json.Marshal(meta)
	if err == nil {
		// Its members, and members that joined meanwhile (their base, read
		// from the store at start, may predate it).
		complete := &wire.CheckpointComplete{Id: meta.ID, Meta: b}
		sent := map[string]bool{}
		for _, mem := range slices.Concat(p.members, c.view.Members) {
			if !sent[mem.ID] {
				sent[mem.ID] = true
				c.root.Send(actor.NewPID(mem.Address, checkpointerName), complete)
			}
		}
	}
	for _, req := range p.requests {
		c.answer(req, Reply{ID: meta.ID})
	}
	c.n.Checkpointed(meta.ID, meta.Duration(), meta.Uploaded(), meta.Size(), nil)
	c.log.Debug("checkpoint complete", "checkpoint", meta.ID, "duration", meta.Duration(), "stored", time.Since(meta.Started),
		"uploaded", meta.Uploaded(), "size", meta.Size(), "phases", partPhases(meta))
	keep, store, log := c.cfg.Keep, c.store, c.log
	c.n.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := store.Retain(ctx, keep); err != nil {
			log.Warn("deleting old checkpoints failed; retried after the next one", "error", err)
		}
	})
}

// partPhases describes where each node's part of m spent its time, for
// the coordinator's log.
func partPhases(m checkpoint.Meta) string {
	var b strings.Builder
	for _, p := range m.Nodes {
		if p.Phases == nil {
			continue
		}
		ph := p.Phases
		fmt.Fprintf(&b, "%s: injected %v, snapshotted %v, copied %v, uploaded %v; ", p.Node,
			ph.Injected.Round(time.Millisecond), ph.Snapshotted.Round(time.Millisecond), ph.Copied.Round(time.Millisecond), ph.Uploaded.Round(time.Millisecond))
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// coordAbort abandons the checkpoint in progress everywhere and schedules
// the next one after a growing delay.
func (c *Checkpointer) coordAbort(reason string) {
	r := &c.coord
	p := r.pending
	if p == nil {
		return
	}
	r.pending = nil
	r.stats.Failed++
	r.stats.ConsecutiveFailures++
	r.stats.LastFailure = time.Now()
	r.stats.InProgress = 0
	r.stats.LastError = fmt.Sprintf("checkpoint %d: %s", p.id, reason)
	if r.delays == nil {
		// Never sooner than the interval: an interval above 30 s is
		// also the longest delay.
		r.delays = backoff.New(c.cfg.Interval, max(c.cfg.Interval, 30*time.Second), 0.2)
	}
	r.next = time.Now().Add(r.delays.Next())
	c.tickAt(r.next)
	abort := &wire.CheckpointAbort{Id: p.id, Reason: reason}
	for _, m := range p.members {
		c.root.Send(actor.NewPID(m.Address, checkpointerName), abort)
	}
	for _, req := range p.requests {
		// A savepoint is tried again, after the same delay, unless it failed
		// too often.
		if req.failures++; req.failures < savepointAttempts {
			r.requests = append(r.requests, req)
			continue
		}
		c.answer(req, Reply{Err: fmt.Errorf("checkpoint %d failed (attempt %d of %d): %s", p.id, req.failures, savepointAttempts, reason)})
	}
	c.n.Checkpointed(p.id, time.Since(p.started), 0, 0, errors.New(reason))
	c.log.Warn("checkpoint failed; retrying", "checkpoint", p.id, "reason", reason, "retry_at", r.next.Format(time.TimeOnly))
}

// coordOnRequest takes a savepoint request: the next checkpoint starts now
// (or once the one in progress ends); a node that does not coordinate
// forwards it (requests.go).
func (c *Checkpointer) coordOnRequest(m Request) {
	r := &c.coord
	if !r.leader {
		if m.remote != nil {
			// Forwarded by a node that thinks this one coordinates: the
			// views differ for a moment; never forward twice.
			c.answer(m, Reply{Err: fmt.Errorf("node %s does not coordinate checkpoints (%s does, as it sees the cluster)", c.id, leaderOf(c.view.Members))})
			return
		}
		c.forward(m)
		return
	}
	// The checkpoint in progress, if any, started before the request: the
	// savepoint is the next one, which starts as soon as it ends.
	r.requests = append(r.requests, m)
	c.tick()
}

// status returns the coordinator's statistics.
func (c *Checkpointer) status() Stats {
	s := c.coord.stats
	s.Coordinator = c.coord.leader
	s.CoordinatorNode = leaderOf(c.view.Members)
	s.Generation = c.gen
	if c.latest != nil && s.Last < c.latest.ID {
		s.Last, s.LastTime = c.latest.ID, c.latest.Completed
	}
	return s
}

// reportLeaderRestart tells the coordinator of view v that it restarted, if
// v found it so (its incarnation changed): only the others can tell.
func (c *Checkpointer) reportLeaderRestart(v View) {
	leader := leaderOf(v.Members)
	if !slices.Contains(v.Crashed, leader) {
		return
	}
	for _, m := range v.Members {
		if m.ID == leader {
			c.log.Info("telling the checkpoint coordinator it restarted before it was seen gone", "coordinator", leader)
			c.root.Send(actor.NewPID(m.Address, checkpointerName),
				&wire.RestartReport{Node: c.id, Restarted: leader, Incarnation: m.Meta[c.incarnationKey]})
		}
	}
}

// coordOnRestartReport rolls every node back once when another node
// reports that this process replaced a crashed one under the same id
// before anyone saw it gone: the crashed process's instances, state and
// records in flight are gone, as after any crash.
func (c *Checkpointer) coordOnRestartReport(m *wire.RestartReport) {
	r := &c.coord
	if r.restart || m.Restarted != c.id || m.Incarnation != c.incarnation {
		return
	}
	r.reported = m.Node
	if r.leader {
		c.coordRestarted()
	}
}

// coordRestarted rolls back for a RestartReport heard (coordOnRestartReport).
func (c *Checkpointer) coordRestarted() {
	r := &c.coord
	r.restart = true
	c.coordRollback(fmt.Sprintf("this node restarted before it was seen gone (reported by %s)", r.reported))
}
