package ckpt

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/persistence"
)

// Config configures checkpoints.
type Config struct {
	// Store keeps the checkpoints; required.
	Store *checkpoint.Store
	// Interval is the time between the starts of two checkpoints (at least
	// a quarter of it passes between the end of one and the start of the
	// next); 0 means 1 s.
	Interval time.Duration
	// Timeout abandons a checkpoint that has not completed after it; 0
	// means 1 minute.
	Timeout time.Duration
	// Keep is how many complete checkpoints are kept; 0 means 3.
	// Savepoints (taken on request) are kept besides.
	Keep int
	// RestoreFrom, when not 0, makes the cluster's first restore use this
	// complete checkpoint rather than the newest (checkpoint.Store's
	// StartFrom: newer checkpoints are abandoned). Once a node of the
	// cluster started from it, later starts and rollbacks use the newest
	// checkpoint again, so the setting may stay.
	RestoreFrom uint64
}

// Params are the values a checkpointer is made with (New).
type Params struct {
	NodeID  string
	DataDir string // the node's data directory: local checkpoint copies live under it
	DBID    string // the node's database identity (shared files live under sst/<DBID>/)
	Config  Config // with its defaults filled in
	Root    *actor.RootContext
	DB      *persistence.DB
	Log     *slog.Logger
	// Restorer is the node's: a finished rollback closes what it opened.
	Restorer *Restorer
	// Incarnation is this process's, in its member record under the
	// metadata key IncarnationKey.
	Incarnation, IncarnationKey string
	// Gen is the rollback generation the node starts in, Latest the
	// newest complete checkpoint (nil: none).
	Gen    uint64
	Latest *checkpoint.Meta
}

// Node is what the checkpointer needs of the node it runs on; package
// actors implements it. Every method is called from the checkpointer's
// goroutine and must not block on the checkpointer.
type Node interface {
	// Instances returns every instance on the node.
	Instances() []Instance
	// Participants returns the instances of the current topology placed
	// on the node, ordered by key, or why the node cannot take part in a
	// checkpoint now.
	Participants() ([]Instance, string)
	// TopologyVersion returns the version of the topology the node runs.
	TopologyVersion() int64

	// Go runs f on a goroutine the node's Stop waits for; AfterFunc runs
	// f after d unless the node stops first; Tick sends msg to pid every
	// period until stop is called (stop waits for the sending goroutine).
	Go(f func())
	AfterFunc(d time.Duration, f func())
	Tick(pid *actor.PID, every time.Duration, msg any) (stop func())
	// Life is cancelled when the node stops.
	Life() context.Context

	// Vouched reports whether the message being handled, claiming to come
	// from node claimed, came from this node or over claimed's
	// certificate (it logs one that did not, which the caller drops).
	Vouched(ctx actor.Context, what, claimed string) bool
	// Fence fails the node for good: it missed a rollback.
	Fence(reason string)
	// SetGeneration records the rollback generation the node runs in;
	// SetBase the checkpoint instances restore from when activated
	// without state handed over (nil: none).
	SetGeneration(gen uint64)
	SetBase(meta *checkpoint.Meta)
	// RolledBack tells the placement coordinator that every instance of
	// the node reset for the rollback into generation gen, to checkpoint
	// meta: it makes those that were active restore, and answers with
	// Restoring.
	RolledBack(gen uint64, meta *checkpoint.Meta)

	// Checkpointed reports a checkpoint this node coordinated (err nil:
	// complete) to the node's observer.
	Checkpointed(id uint64, took time.Duration, uploaded, size int64, err error)
	// RollingBack records the event of a rollback this node coordinates;
	// Restored that instances (their count by operator) were restored
	// from checkpoint id by a rollback that took took.
	RollingBack(reason string)
	Restored(id uint64, byOp map[string]int, took time.Duration)
}
