package ckpt

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/checkpoint"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/topology"
)

// The messages between the checkpointer and the node's other actors (its
// instances, the placement coordinator) and the node itself. They never
// leave the process; what crosses nodes is package actors/wire.

// Key names an operator instance: its operator, the operator's epoch
// (layout) and its index.
type Key struct {
	Op    string
	Epoch int64
	Index int
}

func (k Key) String() string { return fmt.Sprintf("%s/%d.%d", k.Op, k.Epoch, k.Index) }

// Compare orders keys by operator, epoch and index.
func (k Key) Compare(o Key) int {
	if k.Op != o.Op {
		if k.Op < o.Op {
			return -1
		}
		return 1
	}
	if k.Epoch != o.Epoch {
		return int(k.Epoch - o.Epoch)
	}
	return k.Index - o.Index
}

// Instance is an instance on the node, as the checkpointer sees it: its
// key and its actor.
type Instance struct {
	Key Key
	PID *actor.PID
}

// View is what the placement coordinator publishes to the checkpointer:
// the node's latest view of membership and topology.
type View struct {
	Members []cluster.Member
	Topo    topology.Topology
	// Crashed lists members that left without announcing it.
	Crashed []string
}

// Messages from the checkpointer to instances.
type (
	// Barrier makes an instance without upstream barriers snapshot for
	// checkpoint ID now (the checkpointer's trigger).
	Barrier struct{ ID uint64 }
	// Taken tells an instance that its node copied its database for
	// checkpoint ID: state commits may resume.
	Taken struct{ ID uint64 }
	// Complete tells an instance that checkpoint ID is complete: a
	// Committer commits. Done, if set, is closed once it did (the final
	// checkpoint of a stop waits for it).
	Complete struct {
		ID   uint64
		Done chan struct{}
	}
	// Abort tells an instance that checkpoint ID was abandoned.
	Abort struct{ ID uint64 }
	// Reset makes an instance drop everything in flight and wait for
	// its state (generation Gen); an instance in Gen already (created in
	// it, or reset twice) keeps what it has.
	Reset struct{ Gen uint64 }
)

// Messages from instances to the checkpointer.
type (
	// Lost tells the checkpointer that a barrier of checkpoint ID will
	// not reach a destination (an output changing its layout did not take
	// it, or it came back bounced): the instances downstream would wait
	// for it until the checkpoint times out, holding their other inputs,
	// so the checkpoint is abandoned now.
	Lost struct {
		ID     uint64
		Reason string
	}
	// Moved tells the checkpointer that an instance holding commits for
	// checkpoint ID moves away and commits what it wrote after the
	// barrier: the node's copy for ID, if not taken before that commit,
	// would hold state from after the checkpoint, so the node's part
	// fails.
	Moved struct {
		ID  uint64
		Key Key
	}
	// Snapped reports an instance's snapshot for checkpoint ID;
	// Triggered marks one the trigger made (a source's), not barriers.
	Snapped struct {
		ID        uint64
		Key       Key
		Groups    checkpoint.Groups
		Err       error
		Triggered bool
	}
	// ResetDone reports an instance's reset into generation Gen.
	ResetDone struct {
		Key Key
		Gen uint64
	}
	// Restored reports an instance's restore (for the rollback into
	// generation Gen).
	Restored struct {
		Key Key
		Gen uint64
		Err error
	}
)

// Messages from the node and its placement coordinator (View too).
type (
	// Restoring tells the checkpointer which instances the placement
	// coordinator made restore for the rollback in generation Gen.
	Restoring struct {
		Gen  uint64
		Keys []Key
	}
	// LostInFlight tells the checkpointer that producers here gave up on
	// batches of generation Gen in flight to the crashed process at actor
	// address Addr (What: which batches).
	LostInFlight struct {
		Gen  uint64
		Addr string
		What string
	}
	// Request asks the coordinator for a checkpoint now (a savepoint);
	// the id or an error goes to Reply (a request of this node) or to
	// remote (a request another node forwarded, as seq).
	Request struct {
		Reply    chan<- Reply
		remote   *actor.PID
		seq      uint64
		failures int // checkpoints that failed for it
	}
	// Reply answers a Request: the savepoint's ID, or why it failed.
	Reply struct {
		ID  uint64
		Err error
	}
	// StatusRequest asks the checkpointer for its Stats.
	StatusRequest struct{ Reply chan<- Stats }
)
