package actors

import (
	"github.com/sluicehq/sluice/actors/flow"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
)

// The runtime's messages. Each meaning has one type: what arrives from
// another node is converted by the dispatcher (dispatcher.go).

// batchMsg carries a batch of records from one producer to one instance.
// The receiver acknowledges it to From with an ackMsg for Slot once every
// record in it has been processed; that returns the producer's credit.
type batchMsg struct {
	*flow.Batch
	remote bool // arrived over the wire
	// counted is the instance whose queued counter includes these
	// records (nil: none): whoever takes the batch off the queue, by
	// processing or bouncing it, subtracts them from that same counter.
	counted *instance
}

// durableMsg tells a producer its batches on slot up to seq are durable;
// with rewound, that the destination rewound having processed them (see
// durability.go).
type durableMsg struct {
	slot    int32
	seq     uint64
	rewound bool
}

// ackMsg returns one credit for the producer's output slot.
type ackMsg struct{ slot int32 }

// bounceMsg returns a batch the destination did not process because the
// instance no longer runs there.
type bounceMsg struct {
	slot    int32
	seq     uint64
	records []core.Record
	control *flow.Control
}

// Self-addressed ticks and control messages of an instance.
type (
	// flushMsg sends output buffers that are not full; it is queued behind
	// the messages already in the mailbox, so batches fill up under load and
	// go out at once when the instance is idle.
	flushMsg struct{}
	// pollMsg asks a source instance to call Poll.
	pollMsg struct{}
	// timerMsg asks an instance to fire the timers that are due.
	timerMsg struct{}
	// routesMsg tells an instance that a new route table was published.
	routesMsg struct{}
	// retryMsg asks a producer to re-send bounced records.
	retryMsg struct{}
	// rewindMsg tells an instance that a node crashed: drop pending
	// durability snapshots, and rewind a replayable source.
	rewindMsg struct{}
	// commitMsg asks an instance to commit its state.
	commitMsg struct{}
	// activateMsg starts an instance's timers and polling once every
	// instance of the node exists.
	activateMsg struct {
		gen        uint64 // the rollback generation it was sent in: a reset instance ignores older ones
		restore    bool   // no node handed the state over: restore it from the state log
		checkpoint bool   // restore it from the base checkpoint (exactly-once)
	}
	// quiesceMsg asks an instance whether it holds unsent output or
	// unprocessed input; the answer goes to reply: empty when it holds
	// none, else what it holds.
	quiesceMsg struct{ reply chan<- string }
	// spawnMsg asks an operator's supervisor to spawn an instance.
	spawnMsg struct {
		inst *instance
		done chan<- error
	}
	// releaseMsg tells an instance that it no longer runs here: it stops
	// taking input, commits its state and tells the coordinator.
	releaseMsg struct{}
	// acquireMsg tells a released instance that it runs here again: it
	// waits for its state, then for activateMsg.
	acquireMsg struct{}
	// specMsg tells an instance that its operator's settings changed
	// within its epoch (a redeploy with other outputs, inputs or restart
	// policy): it adopts them at once.
	specMsg struct{ spec topology.OperatorSpec }
)
