package node

import (
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/actors/tail"
)

// Subscription delivers a stream's records to a reader outside the
// operators: see Runtime.Subscribe.
type Subscription = tail.Subscription

// OperatorStatus describes one operator and its instances.
//
// Its fields (go doc actors/status.OperatorStatus has them in full):
//
//	Name string
//	Kind string
//	Parallelism int
//	Epoch int64
//	Inputs []core.Input
//	Outputs []string
//	Instances []InstanceStatus     // Instances are the instances on this node (of any epoch, in any mode).
//	RecentDeadLetters []DeadLetter // RecentDeadLetters are the operator's latest dead letters on this node (at most …
type OperatorStatus = status.OperatorStatus

// InstanceStatus describes one operator instance.
//
// Its fields (go doc actors/status.InstanceStatus has them in full):
//
//	Index int
//	Epoch int64
//	Node string
//	FirstGroup, EndGroup int // FirstGroup and EndGroup bound the key groups the instance owns.
//	State InstanceState      // State is what the instance is doing on this node.
//	Restarts int             // Restarts counts restarts since the node started.
//	Processed int64          // Processed counts records taken from the instance's inputs (including those …
//	Produced int64           // Produced counts records the instance produced (dead letters excluded), over the …
//	DeadLetters int64        // DeadLetters counts records and timers sent to the dead-letter stream.
//	Queued int64             // Queued is the number of records delivered to the instance and not yet processed (its …
//	Blocked time.Duration    // Blocked is the time the instance spent blocked by backpressure (a full output buffer …
//	Busy time.Duration       // Busy is the time the instance spent working since it started on this node: in …
//	StateBytes int64         // StateBytes estimates the disk space of the instance's key groups.
//	TransientErrors int64    // TransientErrors counts the transient failures (core.ErrTransient) of the instance's …
//	Watermark time.Time      // Watermark is the instance's event-time watermark (zero before any; the end of time, …
//	Finished bool            // Finished says the instance's input ended (a source: its Poll returned ErrEndOfStream), …
//	LastError string         // LastError is the most recent failure, if any.
//	FailedReason string      // FailedReason says why the instance was marked failed.
type InstanceStatus = status.InstanceStatus
