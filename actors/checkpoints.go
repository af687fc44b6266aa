package actors

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/ckpt"
	"github.com/sluicehq/sluice/actors/handoff"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/internal/backoff"
)

// The node's side of checkpoints (exactly-once): it starts the
// checkpointer (package actors/ckpt) and answers what it asks of the node
// (ckptNode), and the Node's methods on checkpoints ask it or the store.
// An instance's part is checkpointing.go, its rollback rollback.go.

// CheckpointConfig configures checkpoints (see ckpt.Config).
type CheckpointConfig = ckpt.Config

// CheckpointStats describes the checkpoints coordinated by a node (see
// ckpt.Stats).
type CheckpointStats = ckpt.Stats

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
	c := ckpt.New(ckpt.Params{NodeID: n.cfg.NodeID, DataDir: n.cfg.DataDir, DBID: dbID, Config: *n.cfg.Checkpoints,
		Root: n.system.Root, DB: n.db, Log: n.log, Restorer: n.restorer,
		Incarnation: n.incarnation, IncarnationKey: metaIncarnation, Gen: gen.Gen, Latest: latest}, ckptNode{n})
	n.ckpt, err = ckpt.Spawn(n.system.Root, c)
	if err != nil {
		return fmt.Errorf("actors: start checkpointer: %w", err)
	}
	return nil
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
// asks the coordinator (ckpt/requests.go). A checkpoint that fails is tried
// again after the coordinator's retry delay, up to five times; then the
// error says why the last one failed.
func (n *Node) Checkpoint(ctx context.Context) (uint64, error) {
	if n.ckpt == nil {
		return 0, ErrNoCheckpoints
	}
	reply := make(chan ckpt.Reply, 1)
	n.system.Root.Send(n.ckpt, ckpt.Request{Reply: reply})
	select {
	case r := <-reply:
		return r.ID, r.Err
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
	n.system.Root.Send(n.ckpt, ckpt.StatusRequest{Reply: reply})
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
	return err == nil && len(st.Members) <= 1
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

// ErrNoCheckpoints is returned by the checkpoint methods of a node that
// takes no checkpoints (its guarantee is not exactly-once).
var ErrNoCheckpoints = errors.New("actors: checkpoints are off (the guarantee is not exactly-once)")

// Checkpoints returns the complete checkpoints kept in the store, newest
// first. Every node reads the shared store directly, so any node answers
// the same.
func (n *Node) Checkpoints(ctx context.Context) ([]checkpoint.Meta, error) {
	if n.cfg.Checkpoints == nil {
		return nil, ErrNoCheckpoints
	}
	list, err := n.cfg.Checkpoints.Store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("actors: list checkpoints: %w", err)
	}
	slices.Reverse(list)
	return list, nil
}

// CheckpointMeta returns the metadata of complete checkpoint id, read from
// the store (checkpoint.ErrNotFound when there is none).
func (n *Node) CheckpointMeta(ctx context.Context, id uint64) (checkpoint.Meta, error) {
	if n.cfg.Checkpoints == nil {
		return checkpoint.Meta{}, ErrNoCheckpoints
	}
	m, err := n.cfg.Checkpoints.Store.Get(ctx, id)
	if err != nil {
		return checkpoint.Meta{}, fmt.Errorf("actors: %w", err)
	}
	return m, nil
}

// ckptNode is the node as its checkpointer sees it (ckpt.Node).
type ckptNode struct{ n *Node }

var _ ckpt.Node = ckptNode{}

// ckKey returns k as package ckpt names instances.
func (k instKey) ckKey() ckpt.Key { return ckpt.Key{Op: k.op, Epoch: k.epoch, Index: k.index} }

// fromCkKey returns the instance key k names.
func fromCkKey(k ckpt.Key) instKey { return instKey{op: k.Op, epoch: k.Epoch, index: k.Index} }

func (c ckptNode) Instances() []ckpt.Instance {
	insts := c.n.instances()
	out := make([]ckpt.Instance, len(insts))
	for i, inst := range insts {
		out[i] = ckpt.Instance{Key: inst.key.ckKey(), PID: inst.pid}
	}
	return out
}

// Participants returns the instances of the current topology placed on
// this node, or why the node cannot take part now.
func (c ckptNode) Participants() ([]ckpt.Instance, string) {
	topo := c.n.topology()
	var out []ckpt.Instance
	for _, inst := range c.n.instances() {
		spec, ok := topo.Find(inst.key.op)
		if !ok || spec.Epoch != inst.key.epoch {
			continue // a previous layout's, being drained
		}
		switch st := status.InstanceState(inst.stateName()); st {
		case status.StateRunning, status.StateFailed, status.StateRestarting:
			out = append(out, ckpt.Instance{Key: inst.key.ckKey(), PID: inst.pid})
		case status.StateReleased, status.StateStopped:
		default:
			return nil, fmt.Sprintf("instance %s on node %s is %s", inst.key, c.n.cfg.NodeID, st)
		}
	}
	slices.SortFunc(out, func(a, b ckpt.Instance) int { return a.Key.Compare(b.Key) })
	return out, ""
}

func (c ckptNode) TopologyVersion() int64              { return c.n.topology().Version }
func (c ckptNode) Go(f func())                         { c.n.goFunc(f) }
func (c ckptNode) AfterFunc(d time.Duration, f func()) { c.n.afterFunc(d, f) }
func (c ckptNode) Life() context.Context               { return c.n.life }
func (c ckptNode) Fence(reason string)                 { c.n.fence(reason) }
func (c ckptNode) SetGeneration(gen uint64)            { c.n.gen.Store(gen) }
func (c ckptNode) SetBase(meta *checkpoint.Meta)       { c.n.setBase(meta) }

func (c ckptNode) Tick(pid *actor.PID, every time.Duration, msg any) func() {
	return c.n.tickSelf(pid, every, msg).stop
}

func (c ckptNode) Vouched(ctx actor.Context, what, claimed string) bool {
	return c.n.vouched(ctx, what, claimed)
}

func (c ckptNode) RolledBack(gen uint64, meta *checkpoint.Meta) {
	c.n.system.Root.Send(c.n.coord, handoff.RolledBack{Gen: gen, Meta: meta})
}

func (c ckptNode) Checkpointed(id uint64, took time.Duration, uploaded, size int64, err error) {
	if obs := c.n.checkpointObserver(); obs != nil {
		obs.Checkpointed(id, took, uploaded, size, err)
	}
}

func (c ckptNode) RollingBack(reason string) {
	c.n.journal.Record(status.Event{What: status.EventRollback, Detail: reason})
}

func (c ckptNode) Restored(id uint64, byOp map[string]int, took time.Duration) {
	c.n.journal.Restored(id, byOp, "by the rollback", took)
}
