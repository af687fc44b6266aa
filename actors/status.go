package actors

import "github.com/sluicehq/sluice/internal/core"

// OperatorStatus describes one operator on a node.
type OperatorStatus struct {
	Name        string
	Parallelism int
	Inputs      []core.Input
	Outputs     []string
	Instances   []InstanceStatus
}

// InstanceStatus describes one operator instance.
type InstanceStatus struct {
	Index int
	Node  string
	// State is "starting", "running", "restarting", "failed" or "stopped".
	State string
	// Restarts counts restarts since the node started.
	Restarts int
	// Processed counts records taken from the instance's inputs (including
	// those dead-lettered).
	Processed int64
	// Produced counts records the instance produced (dead letters excluded).
	Produced int64
	// DeadLetters counts records and timers sent to the dead-letter stream.
	DeadLetters int64
	// LastError is the most recent failure, if any.
	LastError string
	// FailedReason says why the instance was marked failed.
	FailedReason string
}

// status snapshots the instance.
func (i *instance) status() InstanceStatus {
	i.mu.Lock()
	defer i.mu.Unlock()
	return InstanceStatus{
		Index:        i.index,
		Node:         i.node.cfg.NodeID,
		State:        i.state,
		Restarts:     i.restarts,
		Processed:    i.processed.Load(),
		Produced:     i.producedPub.Load(),
		DeadLetters:  i.deadLetters.Load(),
		LastError:    i.lastError,
		FailedReason: i.failedReason,
	}
}
