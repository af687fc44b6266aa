package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/sluicehq/sluice/internal/core"
)

// batchMsg carries records of one stream from one producer to one instance.
// The receiver acknowledges it to from with an ackMsg for slot once every
// record in it has been processed; that returns the producer's credit.
type batchMsg struct {
	stream  string
	routing core.Routing
	from    *actor.PID // where the ack goes
	slot    int32      // the producer's output slot, echoed in the ack
	records []core.Record
}

// ackMsg returns one credit for the producer's output slot.
type ackMsg struct{ slot int32 }

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
	// commitMsg asks an instance to commit its state.
	commitMsg struct{}
	// activateMsg starts an instance's timers and polling once every
	// instance of the node exists.
	activateMsg struct{}
	// quiesceMsg asks an instance whether it holds unsent output or
	// unprocessed input; the answer goes to reply.
	quiesceMsg struct{ reply chan<- bool }
	// spawnMsg asks an operator's supervisor to spawn its instances.
	spawnMsg struct{ done chan<- error }
)
