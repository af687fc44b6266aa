package ckpt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/wire"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/persistence"
)

// checkpointerName is the actor id of every node's checkpointer.
const checkpointerName = "sluice-checkpoint"

// errGeneration starts the failure of a node part whose node is in another
// rollback generation than the coordinator: the coordinator rolls every
// node back again, into one generation.
const errGeneration = "generation mismatch"

// Checkpointer is the actor through which a node takes part in
// checkpoints (exactly-once, actors.Config.Checkpoints). On one node, the
// member with the lowest id, it is also the coordinator (coordinator.go).
//
// A node's part of checkpoint N: on the coordinator's trigger it checks
// that it runs the same topology and that every instance placed here is
// active, and triggers its instances; those without upstream barriers
// snapshot at once and send barrier N downstream, the others when the
// barrier has reached them on every input edge (actors/checkpointing.go).
// Once every local instance has snapshotted, it copies the database
// restricted to their key groups (persistence.Checkpoint: instances hold
// their later writes in memory meanwhile, so the copy is exactly the state
// at the barriers), lets them go on, uploads the copy (checkpoint.Store) on
// a goroutine and reports its part. When the coordinator completes N,
// Committer sinks commit. The node keeps the newest complete checkpoint's
// copy, so that a rollback restores its own key groups without downloading
// them.
type Checkpointer struct {
	n              Node
	root           *actor.RootContext
	db             *persistence.DB
	log            *slog.Logger
	restorer       *Restorer
	store          *checkpoint.Store
	cfg            Config
	id             string // the node's id
	dataDir        string
	incarnation    string // this process's (Params.Incarnation)
	incarnationKey string // the member metadata key of it
	self           *actor.PID
	dbID           string // the node's database identity (shared files live under sst/<dbID>/)

	view       View   // the node's latest view of membership and topology
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

	coord    coordRole            // the coordinator's state (coordinator.go)
	heldLost []*wire.LostInFlight // reports waiting for a view without the crashed process (onLostInFlight)
	rb       *nodeRollback
	fwd      forwarding // savepoint requests forwarded to the coordinator (requests.go)

	stopTick func() // stops the ticker that sends tickMsg (Node.Tick)
}

// nodePart is a node's part of one checkpoint in progress.
type nodePart struct {
	id          uint64
	coordinator *actor.PID
	waiting     map[Key]bool
	groups      []checkpoint.Groups
	failed      string
	uploading   bool
	received    time.Time         // when the trigger reached the node
	phases      checkpoint.Phases // so far
}

// Checkpointer messages from itself.
type (
	tickMsg     struct{}
	uploadedMsg struct {
		ID   uint64
		Part checkpoint.NodePart
		Err  error
	}
)

// New returns the checkpointer of a node, to spawn (Spawn): it starts in
// rollback generation p.Gen, knowing p.Latest as the newest complete
// checkpoint, keeps the node's own copy of that one and deletes older
// local copies.
func New(p Params, n Node) *Checkpointer {
	c := &Checkpointer{n: n, root: p.Root, db: p.DB, log: p.Log, restorer: p.Restorer, store: p.Config.Store, cfg: p.Config,
		id: p.NodeID, dataDir: p.DataDir, incarnation: p.Incarnation, incarnationKey: p.IncarnationKey, dbID: p.DBID,
		dirs: make(map[uint64]string), stopTick: func() {}}
	c.gen = p.Gen
	c.latest = p.Latest
	c.coord.loaded = true
	if p.Latest != nil {
		c.coord.lastID = p.Latest.ID
		c.coord.stats.Last, c.coord.stats.LastTime = p.Latest.ID, p.Latest.Completed
	}
	c.keepLocal()
	return c
}

// Spawn spawns c as the node's checkpointer (every node's has the same
// name, by which the others address it).
func Spawn(root *actor.RootContext, c *Checkpointer) (*actor.PID, error) {
	return root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return c }), checkpointerName)
}

// Receive handles the checkpointer's messages.
func (c *Checkpointer) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.self = ctx.Self()
		c.stopTick() // a restarted actor's previous one
		c.stopTick = c.n.Tick(ctx.Self(), min(c.cfg.Interval, 250*time.Millisecond), tickMsg{})
		if !c.coord.loaded {
			c.loadLatest()
		}
	case *actor.Stopping:
		c.stopTick()
	case View:
		c.onView(m)
	case tickMsg:
		c.tick()
		c.expireForwarded()
	case *wire.CheckpointTrigger:
		c.onTrigger(m)
	case Snapped:
		c.onSnapped(m)
	case Lost:
		c.onLost(m)
	case uploadedMsg:
		c.onUploaded(m)
	case Moved:
		c.onMoved(m)
	case *wire.CheckpointComplete:
		c.onComplete(m)
	case *wire.CheckpointAbort:
		c.onAbort(m.Id, m.Reason)
	case *wire.Rollback:
		c.onRollback(m)
	case ResetDone:
		c.onReset(m)
	case Restoring:
		c.onRestoring(m)
	case Restored:
		c.onRestored(m)
	case LostInFlight:
		c.onLostInFlight(m)
	// The coordinator's messages (coordinator.go).
	case *wire.CheckpointPart:
		if c.n.Vouched(ctx, "CheckpointPart", m.Node) {
			c.coordOnPart(m)
		}
	case *wire.RollbackDone:
		if c.n.Vouched(ctx, "RollbackDone", m.Node) {
			c.coordOnRollbackDone(m)
		}
	case *wire.RestartReport:
		if c.n.Vouched(ctx, "RestartReport", m.Node) {
			c.coordOnRestartReport(m)
		}
	case *wire.LostInFlight:
		if c.n.Vouched(ctx, "LostInFlight", m.Node) {
			c.coordOnLostInFlight(m)
		}
	case storedMsg:
		c.coordOnStored(m)
	case genRecordedMsg:
		c.coordOnGenRecorded(m)
	case latestMsg:
		c.coordOnLatest(m)
	case Request:
		c.coordOnRequest(m)
	case *wire.CheckpointRequest:
		c.coordOnRequest(Request{remote: ctx.Sender(), seq: m.Seq})
	case *wire.CheckpointReply:
		c.onForwardedReply(m)
	case StatusRequest:
		m.Reply <- c.status()
	}
}

// loadLatest reads the newest complete checkpoint from the store, on a
// goroutine.
func (c *Checkpointer) loadLatest() {
	n, pid := c.n, c.self
	n.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m, err := c.store.Restorable(ctx)
		c.root.Send(pid, latestMsg{Meta: m, Err: err})
	})
}

// onView adopts a new view; the coordinator reacts to it too.
func (c *Checkpointer) onView(v View) {
	old := c.view
	c.view = v
	if c.part != nil && (v.Topo.Version != old.Topo.Version || !sameMembers(v.Members, old.Members)) {
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

// missedRollback fences the node (Node.Fence) and reports true when a
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
func (c *Checkpointer) missedRollback(gen uint64, what string) bool {
	if gen <= c.gen || !c.inGen {
		return false
	}
	c.n.Fence(fmt.Sprintf("%s is in rollback generation %d, which this node (in generation %d) missed: the cluster went on without it", what, gen, c.gen))
	c.failPart("fenced")
	return true
}

// onTrigger starts this node's part of a checkpoint.
func (c *Checkpointer) onTrigger(m *wire.CheckpointTrigger) {
	if c.part != nil {
		c.failPart(fmt.Sprintf("superseded by checkpoint %d", m.Id))
	}
	if c.missedRollback(m.Generation, fmt.Sprintf("checkpoint %d", m.Id)) {
		return
	}
	p := &nodePart{id: m.Id, coordinator: m.Coordinator, waiting: make(map[Key]bool), received: time.Now()}
	c.part = p
	c.trigID, c.trigCoord, c.lostSaid = m.Id, m.Coordinator, false
	switch {
	case m.Generation != c.gen:
		p.failed = fmt.Sprintf("%s: node %s is in rollback generation %d, not %d", errGeneration, c.id, c.gen, m.Generation)
	case c.rb != nil:
		p.failed = fmt.Sprintf("node %s is rolling back", c.id)
	case c.n.TopologyVersion() != m.TopologyVersion:
		p.failed = fmt.Sprintf("node %s runs topology version %d, not %d", c.id, c.n.TopologyVersion(), m.TopologyVersion)
	}
	if p.failed != "" {
		c.reportPart(p, checkpoint.NodePart{})
		return
	}
	insts, busy := c.n.Participants()
	if busy != "" {
		p.failed = busy
		c.reportPart(p, checkpoint.NodePart{})
		return
	}
	for _, inst := range insts {
		p.waiting[inst.Key] = true
	}
	for _, inst := range insts {
		c.root.Send(inst.PID, Barrier{ID: m.Id})
	}
	// What is in the memtable now is flushed while the barriers travel:
	// the copy, once every instance snapshotted, flushes only the rest.
	if err := c.db.StartFlush(); err != nil {
		c.log.Debug("starting a flush before the checkpoint's copy failed", "checkpoint", m.Id, "error", err)
	}
	c.maybeTake()
}

// onSnapped records an instance's snapshot.
func (c *Checkpointer) onSnapped(m Snapped) {
	p := c.part
	if p == nil || p.id != m.ID || !p.waiting[m.Key] {
		return
	}
	delete(p.waiting, m.Key)
	if m.Triggered {
		p.phases.Injected = max(p.phases.Injected, time.Since(p.received))
	}
	if m.Err != nil && p.failed == "" {
		p.failed = m.Err.Error()
	}
	if m.Err == nil {
		if n, err := c.db.EstimateSize(m.Groups.Operator, m.Groups.First, m.Groups.End); err == nil {
			m.Groups.StateBytes = int64(n)
		}
		p.groups = append(p.groups, m.Groups)
	}
	c.maybeTake()
}

// maybeTake copies the database once every local instance snapshotted,
// lets them go on and starts the upload.
func (c *Checkpointer) maybeTake() {
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
	dir := filepath.Join(persistence.CheckpointDir(c.dataDir), strconv.FormatUint(p.id, 10))
	_ = os.RemoveAll(dir)
	spans := make([]persistence.Span, len(p.groups))
	for i, g := range p.groups {
		spans[i] = persistence.GroupSpan(g.Operator, g.First, g.End)
	}
	files, err := c.db.Checkpoint(dir, spans)
	c.releaseHolds(p.id)
	if err != nil {
		p.failed = fmt.Sprintf("node %s: copy the database: %v", c.id, err)
		c.reportPart(p, checkpoint.NodePart{})
		return
	}
	c.dirs[p.id] = dir
	p.uploading = true
	p.phases.Copied = time.Since(p.received)
	id, node, groups, base, pid := p.id, c.id, slices.Clone(p.groups), c.latest, c.self
	phases, received := p.phases, p.received
	c.n.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
		defer cancel()
		part, err := c.store.UploadPart(ctx, id, node, c.dbID, dir, files, base)
		part.Groups = groups
		phases.Uploaded = time.Since(received)
		part.Phases = &phases
		c.root.Send(pid, uploadedMsg{ID: id, Part: part, Err: err})
	})
}

// releaseHolds lets the local instances commit again.
func (c *Checkpointer) releaseHolds(id uint64) {
	for _, inst := range c.n.Instances() {
		c.root.Send(inst.PID, Taken{ID: id})
	}
}

// onLost abandons checkpoint m.ID at once: one of its barriers will not
// reach an instance, which would hold its other inputs until the
// checkpoint timed out. The coordinator hears of it even if this node's
// part is done: the part that cannot complete may be another node's.
func (c *Checkpointer) onLost(m Lost) {
	if m.ID != c.trigID || c.trigCoord == nil || c.lostSaid {
		return // an older checkpoint (over already), or said
	}
	c.lostSaid = true
	c.log.Info("checkpoint abandoned: a barrier was lost", "checkpoint", m.ID, "reason", m.Reason)
	if p := c.part; p != nil && p.id == m.ID && !p.uploading {
		c.failPart(m.Reason)
	}
	c.root.Send(c.trigCoord, &wire.CheckpointPart{Id: m.ID, Node: c.id, Error: m.Reason})
}

// onMoved fails this node's part of checkpoint m.ID: an instance moved
// away during it and committed state from after its barrier, which the
// node's copy may hold.
func (c *Checkpointer) onMoved(m Moved) {
	p := c.part
	if p == nil || p.id != m.ID {
		return
	}
	if p.failed == "" {
		p.failed = fmt.Sprintf("instance %s moved away from node %s during the checkpoint", m.Key, c.id)
	}
	c.maybeTake()
}

// onUploaded reports the uploaded part.
func (c *Checkpointer) onUploaded(m uploadedMsg) {
	p := c.part
	if p == nil || p.id != m.ID {
		return // abandoned meanwhile
	}
	if m.Err != nil {
		p.failed = fmt.Sprintf("node %s: %s", c.id, storeFailure(m.Err))
		c.log.Warn("checkpoint upload failed", "checkpoint", m.ID, "error", m.Err)
	}
	c.reportPart(p, m.Part)
}

// reportPart sends this node's part (or its failure) to the coordinator.
func (c *Checkpointer) reportPart(p *nodePart, part checkpoint.NodePart) {
	if len(c.heldLost) > 0 && p.failed == "" {
		// The coordinator must hear of the loss before this part.
		p.failed = fmt.Sprintf("node %s has records lost in flight to report first", c.id)
	}
	msg := &wire.CheckpointPart{Id: p.id, Node: c.id, Error: p.failed}
	if p.failed == "" {
		b, err := json.Marshal(part)
		if err != nil {
			msg.Error = err.Error()
		}
		msg.Part = b
		c.inGen = c.inGen || err == nil
	}
	if p.coordinator != nil {
		c.root.Send(p.coordinator, msg)
	}
	if p.failed != "" {
		c.dropDir(p.id)
		c.part = nil
	}
}

// failPart abandons this node's part of the checkpoint in progress.
func (c *Checkpointer) failPart(reason string) {
	p := c.part
	if p == nil {
		return
	}
	c.part = nil
	c.abortInstances(p.id)
	c.dropDir(p.id)
	c.log.Debug("checkpoint part abandoned", "checkpoint", p.id, "reason", reason)
}

// abortInstances tells every local instance that checkpoint id is
// abandoned.
func (c *Checkpointer) abortInstances(id uint64) {
	for _, inst := range c.n.Instances() {
		c.root.Send(inst.PID, Abort{ID: id})
	}
}

// onComplete adopts a completed checkpoint: sinks commit, older local
// copies go.
func (c *Checkpointer) onComplete(m *wire.CheckpointComplete) {
	var meta checkpoint.Meta
	if err := json.Unmarshal(m.Meta, &meta); err != nil {
		c.log.Error("undecodable checkpoint metadata", "checkpoint", m.Id, "error", err)
		return
	}
	if meta.Generation < c.gen {
		// Taken before a rollback this node took part in: its timeline was
		// abandoned (a coordinator that stopped coordinating announced it
		// late), and the store skips it too.
		c.log.Debug("ignored the completion of a checkpoint of an older generation", "checkpoint", meta.ID,
			"generation", meta.Generation, "current", c.gen)
		return
	}
	if c.missedRollback(meta.Generation, fmt.Sprintf("the completion of checkpoint %d", meta.ID)) {
		return
	}
	if c.latest == nil || meta.ID > c.latest.ID {
		c.latest = &meta
		c.n.SetBase(&meta)
	}
	if c.part != nil && c.part.id == m.Id {
		c.part = nil
	}
	for _, inst := range c.n.Instances() {
		c.root.Send(inst.PID, Complete{ID: m.Id})
	}
	for id := range c.dirs {
		if id < m.Id {
			c.dropDir(id)
		}
	}
}

// onAbort abandons checkpoint id here.
func (c *Checkpointer) onAbort(id uint64, reason string) {
	if c.part != nil && c.part.id == id {
		c.failPart(reason)
		return
	}
	c.abortInstances(id)
}

// dropDir deletes the local copy of checkpoint id.
func (c *Checkpointer) dropDir(id uint64) {
	if dir, ok := c.dirs[id]; ok {
		delete(c.dirs, id)
		if err := os.RemoveAll(dir); err != nil {
			c.log.Warn("removing a local checkpoint copy failed", "dir", dir, "error", err)
		}
	}
}

// localDir returns the local copy of checkpoint id, if the node has it.
func (c *Checkpointer) localDir(id uint64) (string, bool) {
	dir, ok := c.dirs[id]
	return dir, ok
}

// keepLocal keeps the node's copy of the newest complete checkpoint and
// deletes every other local copy (of checkpoints that never completed, or
// older ones).
func (c *Checkpointer) keepLocal() {
	root := persistence.CheckpointDir(c.dataDir)
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

// storeFailure says why the checkpoint store failed: "store unreachable: "
// and the error when it is a network failure or a timeout (what an outage
// of S3 looks like), else the error.
func storeFailure(err error) string {
	var op *net.OpError
	if errors.As(err, &op) || errors.Is(err, context.DeadlineExceeded) {
		return "store unreachable: " + err.Error()
	}
	return err.Error()
}
