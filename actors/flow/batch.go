package flow

import (
	"time"

	"github.com/sluicehq/sluice/internal/core"
)

// Endpoint names a producer or a destination instance: the actor address of
// its node and its actor id there.
type Endpoint struct {
	Addr string
	ID   string
}

// String returns "id@addr".
func (e Endpoint) String() string { return e.ID + "@" + e.Addr }

// Batch carries records of one stream from one producer to one destination
// instance, in order. The receiver acknowledges it to From for Slot once
// every record has been processed (returning a credit), or bounces it back
// when the instance does not run there.
type Batch struct {
	Stream  string
	Routing core.Routing
	// From is the producer; acks, bounces and durable acks go there.
	From Endpoint
	// FromOp, FromIndex and FromEpoch name the producing instance (its
	// operator, index and layout epoch; empty for records from outside the
	// runtime): the receiver tracks barriers, watermarks and end-of-stream
	// per producing instance, and an operator's instance 0 after a rescale
	// is not the instance 0 before it.
	FromOp    string
	FromIndex int
	FromEpoch int64
	// Slot is the producer's output buffer the batch left from.
	Slot int32
	// Seq numbers the batches of one slot: 1, 2, … (durable acks).
	Seq     uint64
	Records []core.Record
	// Sent is when the producer sent it, when Config.StampSent is set
	// (queue-wait spans); zero otherwise.
	Sent time.Time
	// Control, when set, follows the records: the receiver acts on it once
	// it has processed them.
	Control *Control
	// Gen is the rollback generation the producer ran in (see
	// Producer.SetGeneration).
	Gen uint64
}

// Dest is a destination instance as the runtime reaches it. Send hands a
// batch over without blocking; it is called from the Producer's goroutine.
type Dest interface {
	Endpoint() Endpoint
	Send(b *Batch)
	// Remote reports whether the instance is on another node (it gets
	// Config.RemoteCredits).
	Remote() bool
}
