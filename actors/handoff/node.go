package handoff

import (
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/actors/ckpt"
	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/topology"
)

// Params are the values a coordinator is made with (New).
type Params struct {
	NodeID string
	Addr   string // the node's actor address
	Root   *actor.RootContext
	DB     *persistence.DB
	Log    *slog.Logger
	// Checkpointer is the node's (package actors/ckpt); nil without
	// checkpoints.
	Checkpointer *actor.PID
	// Settle delays acting on a membership change (ClusterConfig.Settle).
	Settle time.Duration
	// ExactlyOnce: the node takes checkpoints; AtLeastOnce: it tracks
	// durability (what a crash of another node means); StateLog: it
	// mirrors state to a log, to restore state no node handed over from.
	ExactlyOnce, AtLeastOnce, StateLog bool
	// IncarnationKey is the member metadata key of a process's
	// incarnation.
	IncarnationKey string
	// ReleasedLinger is how long a released instance stays to bounce
	// records from producers whose route table is stale.
	ReleasedLinger time.Duration
	// Topo is the topology the node starts with, Held the key groups it
	// holds (op → flags; nil: none), Gen its rollback generation.
	Topo topology.Topology
	Held map[string][]bool
	Gen  uint64
}

// Instance is an instance on this node, as the coordinator sees it.
type Instance struct {
	Key    ckpt.Key
	PID    *actor.PID
	Lo, Hi int // its key groups [Lo, Hi)
}

// Node is what the coordinator needs of the node it runs on; package
// actors implements it. Every method is called from the coordinator's
// goroutine (Generation also from an export's) and must not block on
// the coordinator.
type Node interface {
	// Spawn makes the instance index of spec on this node, awaiting its
	// state; Remove stops and forgets one.
	Spawn(spec topology.OperatorSpec, index int) (Instance, error)
	Remove(inst Instance)

	// What the coordinator tells an instance: it no longer runs here
	// (Release) or does again (Acquire), its operator's settings changed
	// within its epoch (SetSpec), a node crashed (Rewind, at-least-once),
	// it has its state and starts in generation gen (Activate: restore
	// from the state log, or from the base checkpoint), it restores from
	// checkpoint meta after a rollback (Restore).
	Release(inst Instance)
	Acquire(inst Instance)
	SetSpec(inst Instance, spec topology.OperatorSpec)
	Rewind(inst Instance)
	Activate(inst Instance, gen uint64, restore, fromCheckpoint bool)
	Restore(inst Instance, gen uint64, meta *checkpoint.Meta)

	// Publish builds and publishes the route table that places each
	// instance on its owner (by node id) among members, and topo as the
	// topology the node runs; Routed then makes the local instances and
	// the node's ingress adopt it.
	Publish(owners map[ckpt.Key]string, members []cluster.Member, topo topology.Topology)
	Routed(local []Instance)

	// Generation returns the node's rollback generation, Base the
	// checkpoint instances restore from when no node hands their state
	// over (nil: none).
	Generation() uint64
	Base() *checkpoint.Meta
	// NoteCrashed records that the process at actor address addr
	// crashed (before the route table without it is published).
	NoteCrashed(addr string)

	// Vouched reports whether the message being handled, claiming to come
	// from node claimed, came from this node or over claimed's
	// certificate (it logs one that did not). Peer returns the node
	// certificate a message came over ("" from this node, or without
	// transport TLS); SpeaksFor whether that certificate speaks for node.
	Vouched(ctx actor.Context, what, claimed string) bool
	Peer(ctx actor.Context) string
	SpeaksFor(peer, node string) bool

	// Go runs f on a goroutine the node's Stop waits for; AfterFunc runs
	// f after d unless the node stops first; Tick sends msg to pid every
	// period until stop is called (stop waits for the sending goroutine).
	Go(f func())
	AfterFunc(d time.Duration, f func())
	Tick(pid *actor.PID, every time.Duration, msg any) (stop func())

	// Events for the node's journal: members joined, left and lost,
	// topology changes, instances restored from checkpoint id as they
	// started here (their count by operator).
	MemberJoined(id string)
	MemberLeft(id string)
	NodeLost(id string)
	TopologyEvents(old, cur topology.Topology)
	RestoredAtStart(id uint64, byOp map[string]int)
}
