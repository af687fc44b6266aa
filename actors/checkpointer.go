package actors

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/topology"
)

// checkpointerName is the actor id of every node's checkpointer.
const checkpointerName = "sluice-checkpoint"

// errGeneration starts the failure of a node part whose node is in another
// rollback generation than the coordinator: the coordinator rolls every
// node back again, into one generation.
const errGeneration = "generation mismatch"

// The checkpointer is the actor through which a node takes part in
// checkpoints (exactly-once, Config.Checkpoints). On one node, the member
// with the lowest id, it is also the coordinator (ckcoord.go).
//
// A node's part of checkpoint N: on the coordinator's trigger it checks
// that it runs the same topology and that every instance placed here is
// active, and triggers its instances; those without upstream barriers
// snapshot at once and send barrier N downstream, the others when the
// barrier has reached them on every input edge (checkpointing.go). Once
// every local instance has snapshotted, it copies the database restricted
// to their key groups (persistence.Checkpoint: instances hold their later
// writes in memory meanwhile, so the copy is exactly the state at the
// barriers), lets them go on, uploads the copy (checkpoint.Store) on a
// goroutine and reports its part. When the coordinator completes N, Committer
// sinks commit. The node keeps the newest complete checkpoint's copy, so
// that a rollback restores its own key groups without downloading them.
type checkpointer struct {
	n     *Node
	store *checkpoint.Store
	cfg   CheckpointConfig
	self  *actor.PID
	dbID  string // the node's database identity (shared files live under sst/<dbID>/)

	view       ckView // the node's latest view of membership and topology
	gen        uint64 // rollback generation
	rolledBack uint64 // the newest generation this node rolled back into
	inGen      bool   // this node took part in generation gen (a rollback into it, a checkpoint part)
	latest     *checkpoint.Meta

	part *nodePart // this node's part of the checkpoint in progress
	dirs map[uint64]string
	// The newest checkpoint triggered here, its coordinator, and whether
	// a lost barrier of it was reported (onLost).
	trigID    uint64
	trigCoord *actor.PID
	lostSaid  bool

	coord    coordRole            // the coordinator's state (ckcoord.go)
	heldLost []*wire.LostInFlight // reports waiting for a view without the crashed process (onLostInFlight)
	rb       *nodeRollback
	fwd      forwarding // savepoint requests forwarded to the coordinator (ckrequest.go)

	ticker *ticker // sends ckTickMsg (ticker.go)
}

// ckView is what the placement coordinator publishes to the checkpointer.
type ckView struct {
	members []cluster.Member
	topo    topology.Topology
	// crashed lists members that left without announcing it.
	crashed []string
}

// nodePart is a node's part of one checkpoint in progress.
type nodePart struct {
	id          uint64
	coordinator *actor.PID
	waiting     map[instKey]bool
	groups      []checkpoint.Groups
	failed      string
	uploading   bool
	received    time.Time         // when the trigger reached the node
	phases      checkpoint.Phases // so far
}

// Checkpointer messages from this node.
type (
	ckViewMsg     struct{ view ckView }
	ckTickMsg     struct{}
	ckUploadedMsg struct {
		id   uint64
		part checkpoint.NodePart
		err  error
	}
)

func newCheckpointer(n *Node, dbID string) *checkpointer {
	return &checkpointer{n: n, store: n.cfg.Checkpoints.Store, cfg: *n.cfg.Checkpoints, dbID: dbID, dirs: make(map[uint64]string)}
}

// Receive handles the checkpointer's messages.
func (c *checkpointer) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.self = ctx.Self()
		c.ticker.stop() // a restarted actor's previous one
		c.ticker = c.n.tickSelf(ctx.Self(), min(c.cfg.Interval, 250*time.Millisecond), ckTickMsg{})
		if !c.coord.loaded {
			c.loadLatest()
		}
	case *actor.Stopping:
		c.ticker.stop()
	case ckViewMsg:
		c.onView(m.view)
	case ckTickMsg:
		c.tick()
		c.expireForwarded()
	case *wire.CheckpointTrigger:
		c.onTrigger(m)
	case ckSnappedMsg:
		c.onSnapped(m)
	case ckLostMsg:
		c.onLost(m)
	case ckUploadedMsg:
		c.onUploaded(m)
	case ckMovedMsg:
		c.onMoved(m)
	case *wire.CheckpointComplete:
		c.onComplete(m)
	case *wire.CheckpointAbort:
		c.onAbort(m.Id, m.Reason)
	case *wire.Rollback:
		c.onRollback(m)
	case ckResetMsg:
		c.onReset(m)
	case ckRestoringMsg:
		c.onRestoring(m)
	case ckRestoredMsg:
		c.onRestored(m)
	case ckLostInFlightMsg:
		c.onLostInFlight(m)
	// The coordinator's messages (ckcoord.go).
	case *wire.CheckpointPart:
		if c.n.vouched(ctx, "CheckpointPart", m.Node) {
			c.coordOnPart(m)
		}
	case *wire.RollbackDone:
		if c.n.vouched(ctx, "RollbackDone", m.Node) {
			c.coordOnRollbackDone(m)
		}
	case *wire.RestartReport:
		if c.n.vouched(ctx, "RestartReport", m.Node) {
			c.coordOnRestartReport(m)
		}
	case *wire.LostInFlight:
		if c.n.vouched(ctx, "LostInFlight", m.Node) {
			c.coordOnLostInFlight(m)
		}
	case ckStoredMsg:
		c.coordOnStored(m)
	case ckGenRecordedMsg:
		c.coordOnGenRecorded(m)
	case ckLatestMsg:
		c.coordOnLatest(m)
	case ckRequestMsg:
		c.coordOnRequest(m)
	case *wire.CheckpointRequest:
		c.coordOnRequest(ckRequestMsg{remote: ctx.Sender(), seq: m.Seq})
	case *wire.CheckpointReply:
		c.onForwardedReply(m)
	case ckStatusMsg:
		m.reply <- c.status()
	}
}

// loadLatest reads the newest complete checkpoint from the store, on a
// goroutine.
func (c *checkpointer) loadLatest() {
	n, pid := c.n, c.self
	n.goFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m, err := c.store.Restorable(ctx)
		n.system.Root.Send(pid, ckLatestMsg{meta: m, err: err})
	})
}

// onView adopts a new view; the coordinator reacts to it too.
func (c *checkpointer) onView(v ckView) {
	old := c.view
	c.view = v
	if c.part != nil && (v.topo.Version != old.topo.Version || !sameMembers(v.members, old.members)) {
		c.failPart("the cluster changed during the checkpoint")
	}
	c.coordOnView(old, v)
	c.sendHeldLost()
}

// sameMembers reports whether a and b list the same member ids.
func sameMembers(a, b []cluster.Member) bool {
	if len(a) != len(b) {
		return false
	}
	ids := make(map[string]bool, len(a))
	for _, m := range a {
		ids[m.ID] = true
	}
	for _, m := range b {
		if !ids[m.ID] {
			return false
		}
	}
	return true
}

// missedRollback fences the node (Node.fence) and reports true when a
// message of checkpoint generation gen (what names it: what) shows that
// the cluster rolled back into gen without this node, though it had taken
// part in its own generation: the others dropped it from their membership
// (it was paused, or cut off, for longer than its TTL), restored its key
// groups from the store and went on. Its instances still run on state and
// inputs the cluster abandoned, and its sinks would commit output the
// others make again, so it must restart and join afresh. A coordinator
// sends a generation's rollback before anything else of it, in order, so
// a member of the rollback has always heard of it first. A node that took
// part in nothing yet (it started while a rollback went on) is not fenced:
// its checkpoint part fails instead and the coordinator rolls every node
// back into one generation again.
func (c *checkpointer) missedRollback(gen uint64, what string) bool {
	if gen <= c.gen || !c.inGen {
		return false
	}
	c.n.fence(fmt.Sprintf("%s is in rollback generation %d, which this node (in generation %d) missed: the cluster went on without it", what, gen, c.gen))
	c.failPart("fenced")
	return true
}

// onTrigger starts this node's part of a checkpoint.
func (c *checkpointer) onTrigger(m *wire.CheckpointTrigger) {
	if c.part != nil {
		c.failPart(fmt.Sprintf("superseded by checkpoint %d", m.Id))
	}
	if c.missedRollback(m.Generation, fmt.Sprintf("checkpoint %d", m.Id)) {
		return
	}
	p := &nodePart{id: m.Id, coordinator: m.Coordinator, waiting: make(map[instKey]bool), received: time.Now()}
	c.part = p
	c.trigID, c.trigCoord, c.lostSaid = m.Id, m.Coordinator, false
	switch {
	case m.Generation != c.gen:
		p.failed = fmt.Sprintf("%s: node %s is in rollback generation %d, not %d", errGeneration, c.n.cfg.NodeID, c.gen, m.Generation)
	case c.rb != nil:
		p.failed = fmt.Sprintf("node %s is rolling back", c.n.cfg.NodeID)
	case c.n.topology().Version != m.TopologyVersion:
		p.failed = fmt.Sprintf("node %s runs topology version %d, not %d", c.n.cfg.NodeID, c.n.topology().Version, m.TopologyVersion)
	}
	if p.failed != "" {
		c.reportPart(p, checkpoint.NodePart{})
		return
	}
	insts, busy := c.participants()
	if busy != "" {
		p.failed = busy
		c.reportPart(p, checkpoint.NodePart{})
		return
	}
	for _, inst := range insts {
		p.waiting[inst.key] = true
	}
	for _, inst := range insts {
		c.n.system.Root.Send(inst.pid, ckBarrierMsg{id: m.Id})
	}
	// What is in the memtable now is flushed while the barriers travel:
	// the copy, once every instance snapshotted, flushes only the rest.
	if err := c.n.db.StartFlush(); err != nil {
		c.n.log.Debug("starting a flush before the checkpoint's copy failed", "checkpoint", m.Id, "error", err)
	}
	c.maybeTake()
}

// participants returns the instances of the current topology placed on
// this node, or why the node cannot take part now.
func (c *checkpointer) participants() ([]*instance, string) {
	topo := c.n.topology()
	var out []*instance
	for _, inst := range c.n.instances() {
		spec, ok := topo.Find(inst.key.op)
		if !ok || spec.Epoch != inst.key.epoch {
			continue // a previous layout's, being drained
		}
		switch st := InstanceState(inst.stateName()); st {
		case StateRunning, StateFailed, StateRestarting:
			out = append(out, inst)
		case StateReleased, StateStopped:
		default:
			return nil, fmt.Sprintf("instance %s on node %s is %s", inst.key, c.n.cfg.NodeID, st)
		}
	}
	slices.SortFunc(out, func(a, b *instance) int { return compareKeys(a.key, b.key) })
	return out, ""
}

func compareKeys(a, b instKey) int {
	if a.op != b.op {
		if a.op < b.op {
			return -1
		}
		return 1
	}
	if a.epoch != b.epoch {
		return int(a.epoch - b.epoch)
	}
	return a.index - b.index
}

// onSnapped records an instance's snapshot.
func (c *checkpointer) onSnapped(m ckSnappedMsg) {
	p := c.part
	if p == nil || p.id != m.id || !p.waiting[m.key] {
		return
	}
	delete(p.waiting, m.key)
	if m.triggered {
		p.phases.Injected = max(p.phases.Injected, time.Since(p.received))
	}
	if m.err != nil && p.failed == "" {
		p.failed = m.err.Error()
	}
	if m.err == nil {
		if n, err := c.n.db.EstimateSize(m.groups.Operator, m.groups.First, m.groups.End); err == nil {
			m.groups.StateBytes = int64(n)
		}
		p.groups = append(p.groups, m.groups)
	}
	c.maybeTake()
}

// maybeTake copies the database once every local instance snapshotted,
// lets them go on and starts the upload.
func (c *checkpointer) maybeTake() {
	p := c.part
	if p == nil || len(p.waiting) > 0 || p.uploading {
		return
	}
	if p.failed != "" {
		c.releaseHolds(p.id)
		c.reportPart(p, checkpoint.NodePart{})
		return
	}
	p.phases.Snapshotted = time.Since(p.received)
	dir := filepath.Join(persistence.CheckpointDir(c.n.cfg.DataDir), strconv.FormatUint(p.id, 10))
	_ = os.RemoveAll(dir)
	spans := make([]persistence.Span, len(p.groups))
	for i, g := range p.groups {
		spans[i] = persistence.GroupSpan(g.Operator, g.First, g.End)
	}
	files, err := c.n.db.Checkpoint(dir, spans)
	c.releaseHolds(p.id)
	if err != nil {
		p.failed = fmt.Sprintf("node %s: copy the database: %v", c.n.cfg.NodeID, err)
		c.reportPart(p, checkpoint.NodePart{})
		return
	}
	c.dirs[p.id] = dir
	p.uploading = true
	p.phases.Copied = time.Since(p.received)
	id, node, groups, base, pid := p.id, c.n.cfg.NodeID, slices.Clone(p.groups), c.latest, c.self
	phases, received := p.phases, p.received
	c.n.goFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
		defer cancel()
		part, err := c.store.UploadPart(ctx, id, node, c.dbID, dir, files, base)
		part.Groups = groups
		phases.Uploaded = time.Since(received)
		part.Phases = &phases
		c.n.system.Root.Send(pid, ckUploadedMsg{id: id, part: part, err: err})
	})
}

// releaseHolds lets the local instances commit again.
func (c *checkpointer) releaseHolds(id uint64) {
	for _, inst := range c.n.instances() {
		c.n.system.Root.Send(inst.pid, ckTakenMsg{id: id})
	}
}

// onLost abandons checkpoint m.id at once: one of its barriers will not
// reach an instance, which would hold its other inputs until the
// checkpoint timed out. The coordinator hears of it even if this node's
// part is done: the part that cannot complete may be another node's.
func (c *checkpointer) onLost(m ckLostMsg) {
	if m.id != c.trigID || c.trigCoord == nil || c.lostSaid {
		return // an older checkpoint (over already), or said
	}
	c.lostSaid = true
	c.n.log.Info("checkpoint abandoned: a barrier was lost", "checkpoint", m.id, "reason", m.reason)
	if p := c.part; p != nil && p.id == m.id && !p.uploading {
		c.failPart(m.reason)
	}
	c.n.system.Root.Send(c.trigCoord, &wire.CheckpointPart{Id: m.id, Node: c.n.cfg.NodeID, Error: m.reason})
}

// onMoved fails this node's part of checkpoint m.id: an instance moved
// away during it and committed state from after its barrier, which the
// node's copy may hold.
func (c *checkpointer) onMoved(m ckMovedMsg) {
	p := c.part
	if p == nil || p.id != m.id {
		return
	}
	if p.failed == "" {
		p.failed = fmt.Sprintf("instance %s moved away from node %s during the checkpoint", m.key, c.n.cfg.NodeID)
	}
	c.maybeTake()
}

// onUploaded reports the uploaded part.
func (c *checkpointer) onUploaded(m ckUploadedMsg) {
	p := c.part
	if p == nil || p.id != m.id {
		return // abandoned meanwhile
	}
	if m.err != nil {
		p.failed = fmt.Sprintf("node %s: %s", c.n.cfg.NodeID, storeFailure(m.err))
		c.n.log.Warn("checkpoint upload failed", "checkpoint", m.id, "error", m.err)
	}
	c.reportPart(p, m.part)
}

// reportPart sends this node's part (or its failure) to the coordinator.
func (c *checkpointer) reportPart(p *nodePart, part checkpoint.NodePart) {
	if len(c.heldLost) > 0 && p.failed == "" {
		// The coordinator must hear of the loss before this part.
		p.failed = fmt.Sprintf("node %s has records lost in flight to report first", c.n.cfg.NodeID)
	}
	msg := &wire.CheckpointPart{Id: p.id, Node: c.n.cfg.NodeID, Error: p.failed}
	if p.failed == "" {
		b, err := json.Marshal(part)
		if err != nil {
			msg.Error = err.Error()
		}
		msg.Part = b
		c.inGen = c.inGen || err == nil
	}
	if p.coordinator != nil {
		c.n.system.Root.Send(p.coordinator, msg)
	}
	if p.failed != "" {
		c.dropDir(p.id)
		c.part = nil
	}
}

// failPart abandons this node's part of the checkpoint in progress.
func (c *checkpointer) failPart(reason string) {
	p := c.part
	if p == nil {
		return
	}
	c.part = nil
	c.abortInstances(p.id)
	c.dropDir(p.id)
	c.n.log.Debug("checkpoint part abandoned", "checkpoint", p.id, "reason", reason)
}

// abortInstances tells every local instance that checkpoint id is
// abandoned.
func (c *checkpointer) abortInstances(id uint64) {
	for _, inst := range c.n.instances() {
		c.n.system.Root.Send(inst.pid, ckAbortMsg{id: id})
	}
}

// onComplete adopts a completed checkpoint: sinks commit, older local
// copies go.
func (c *checkpointer) onComplete(m *wire.CheckpointComplete) {
	var meta checkpoint.Meta
	if err := json.Unmarshal(m.Meta, &meta); err != nil {
		c.n.log.Error("undecodable checkpoint metadata", "checkpoint", m.Id, "error", err)
		return
	}
	if meta.Generation < c.gen {
		// Taken before a rollback this node took part in: its timeline was
		// abandoned (a coordinator that stopped coordinating announced it
		// late), and the store skips it too.
		c.n.log.Debug("ignored the completion of a checkpoint of an older generation", "checkpoint", meta.ID,
			"generation", meta.Generation, "current", c.gen)
		return
	}
	if c.missedRollback(meta.Generation, fmt.Sprintf("the completion of checkpoint %d", meta.ID)) {
		return
	}
	if c.latest == nil || meta.ID > c.latest.ID {
		c.latest = &meta
		c.n.setBase(&meta)
	}
	if c.part != nil && c.part.id == m.Id {
		c.part = nil
	}
	for _, inst := range c.n.instances() {
		c.n.system.Root.Send(inst.pid, ckCompleteMsg{id: m.Id})
	}
	for id := range c.dirs {
		if id < m.Id {
			c.dropDir(id)
		}
	}
}

// onAbort abandons checkpoint id here.
func (c *checkpointer) onAbort(id uint64, reason string) {
	if c.part != nil && c.part.id == id {
		c.failPart(reason)
		return
	}
	c.abortInstances(id)
}

// dropDir deletes the local copy of checkpoint id.
func (c *checkpointer) dropDir(id uint64) {
	if dir, ok := c.dirs[id]; ok {
		delete(c.dirs, id)
		if err := os.RemoveAll(dir); err != nil {
			c.n.log.Warn("removing a local checkpoint copy failed", "dir", dir, "error", err)
		}
	}
}

// localDir returns the local copy of checkpoint id, if the node has it.
func (c *checkpointer) localDir(id uint64) (string, bool) {
	dir, ok := c.dirs[id]
	return dir, ok
}

// startCheckpointer starts the node's checkpointer: it reads the newest
// complete checkpoint (what instances restore from when the node holds no
// newer state for them), keeps the node's own copy of it and drops older
// local copies.
func (n *Node) startCheckpointer(ctx context.Context) error {
	dbID, err := n.databaseID()
	if err != nil {
		return err
	}
	var latest *checkpoint.Meta
	store, from := n.cfg.Checkpoints.Store, n.cfg.Checkpoints.RestoreFrom
	for delays := backoff.New(200*time.Millisecond, 5*time.Second, 0.2); ; {
		var m checkpoint.Meta
		if from != 0 {
			m, err = store.StartFrom(ctx, from)
		} else {
			m, err = store.Restorable(ctx)
		}
		if err == nil {
			latest = &m
			break
		}
		if errors.Is(err, checkpoint.ErrNotFound) {
			if from != 0 {
				return fmt.Errorf("actors: start node %s: restore from checkpoint %d: %w", n.cfg.NodeID, from, err)
			}
			break
		}
		d := delays.Next()
		n.log.Warn("reading the newest checkpoint failed; retrying", "error", err, "retry_in", d)
		if !backoff.Sleep(ctx, d) {
			return fmt.Errorf("actors: start node %s: read the newest checkpoint: %w", n.cfg.NodeID, err)
		}
	}
	n.setBase(latest)
	gen, err := n.cfg.Checkpoints.Store.Generation(ctx)
	if err != nil {
		return fmt.Errorf("actors: start node %s: %w", n.cfg.NodeID, err)
	}
	n.gen.Store(gen.Gen)
	c := newCheckpointer(n, dbID)
	c.gen = gen.Gen
	c.latest = latest
	c.coord.loaded = true
	if latest != nil {
		c.coord.lastID = latest.ID
		c.coord.stats.Last, c.coord.stats.LastTime = latest.ID, latest.Completed
	}
	c.keepLocal()
	n.ckpt, err = n.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return c }), checkpointerName)
	if err != nil {
		return fmt.Errorf("actors: start checkpointer: %w", err)
	}
	return nil
}

// keepLocal keeps the node's copy of the newest complete checkpoint and
// deletes every other local copy (of checkpoints that never completed, or
// older ones).
func (c *checkpointer) keepLocal() {
	root := persistence.CheckpointDir(c.n.cfg.DataDir)
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		id, err := strconv.ParseUint(e.Name(), 10, 64)
		path := filepath.Join(root, e.Name())
		switch {
		case err == nil && c.latest != nil && id == c.latest.ID:
			c.dirs[id] = path
		case e.Name() == "cache":
		default:
			_ = os.RemoveAll(path)
		}
	}
}

// dbIDKey is the node-metadata key of the database's identity.
const dbIDKey = "db-id"

// databaseID returns the identity of the node's database, making one the
// first time.
func (n *Node) databaseID() (string, error) {
	v, ok, err := n.db.GetMeta(dbIDKey)
	if err != nil {
		return "", fmt.Errorf("actors: read the database identity: %w", err)
	}
	if ok {
		return string(v), nil
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("actors: make a database identity: %w", err)
	}
	id := n.cfg.NodeID + "-" + hex.EncodeToString(b[:])
	if err := n.db.SetMeta(dbIDKey, []byte(id)); err != nil {
		return "", fmt.Errorf("actors: record the database identity: %w", err)
	}
	return id, nil
}

// Checkpoint takes a checkpoint now (a savepoint, which retention keeps)
// and returns its id once it is complete. A node that does not coordinate
// asks the coordinator (ckrequest.go). A checkpoint that fails is tried
// again after the coordinator's retry delay, up to five times; then the
// error says why the last one failed.
func (n *Node) Checkpoint(ctx context.Context) (uint64, error) {
	if n.ckpt == nil {
		return 0, ErrNoCheckpoints
	}
	reply := make(chan ckReply, 1)
	n.system.Root.Send(n.ckpt, ckRequestMsg{reply: reply})
	select {
	case r := <-reply:
		return r.id, r.err
	case <-ctx.Done():
		return 0, fmt.Errorf("actors: checkpoint: %w", ctx.Err())
	}
}

// CheckpointStatus describes the node's checkpoints (its coordination, if
// it coordinates, and the newest complete checkpoint it knows), or
// returns ErrNoCheckpoints.
func (n *Node) CheckpointStatus(ctx context.Context) (CheckpointStats, error) {
	if n.ckpt == nil {
		return CheckpointStats{}, ErrNoCheckpoints
	}
	reply := make(chan CheckpointStats, 1)
	n.system.Root.Send(n.ckpt, ckStatusMsg{reply: reply})
	select {
	case s := <-reply:
		return s, nil
	case <-ctx.Done():
		return CheckpointStats{}, ctx.Err()
	}
}

// alone reports whether the node is the only member of its cluster.
func (n *Node) alone(ctx context.Context) bool {
	st, err := n.coordState(ctx)
	return err == nil && len(st.members) <= 1
}

// restoreBase returns the checkpoint an instance activated without state
// handed over restores from: the store's newest restorable checkpoint when
// it is newer than base, the node's (what it was told), else base. A
// checkpoint can complete without its nodes hearing of it (its
// coordinator stopped coordinating, or crashed, while storing it); the
// rollback that follows a crash restores it, and restoring an older one
// first would make a sink undo what it prepared for it (a Kafka sink fences
// its transaction). When the store cannot answer, base (logged).
func (n *Node) restoreBase(base *checkpoint.Meta) *checkpoint.Meta {
	ctx, cancel := context.WithTimeout(n.life, 10*time.Second)
	defer cancel()
	m, err := n.cfg.Checkpoints.Store.Restorable(ctx)
	var baseID uint64
	if base != nil {
		baseID = base.ID
	}
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return base
	case err != nil:
		n.log.Warn("reading the newest checkpoint failed; restoring from the newest this node heard of", "checkpoint", baseID, "error", err)
		return base
	case m.ID > baseID:
		n.log.Debug("restoring from a checkpoint newer than the node's base", "checkpoint", m.ID, "base", baseID)
		return &m
	}
	return base
}
