package status

import (
	"slices"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/topology"
)

// InstanceState is what an instance is doing on a node.
type InstanceState string

// The states of an instance.
const (
	// StateAwaiting: placed here, waiting for its state from the node
	// that held it; input is held.
	StateAwaiting InstanceState = "awaiting"
	// StateRunning: processing input.
	StateRunning InstanceState = "running"
	// StateRestarting: a callback failed; restarting after a backoff.
	StateRestarting InstanceState = "restarting"
	// StateFailed: the restart policy is exhausted; input goes to the
	// dead-letter stream.
	StateFailed InstanceState = "failed"
	// StateReleased: placed elsewhere; input is bounced to the producers.
	StateReleased InstanceState = "released"
	// StateStopped: the node stopped.
	StateStopped InstanceState = "stopped"
)

// String returns the state's name.
func (s InstanceState) String() string { return string(s) }

// OperatorStatus describes one operator and its instances on a node.
type OperatorStatus struct {
	Name        string
	Kind        string
	Parallelism int
	Epoch       int64
	Inputs      []core.Input
	Outputs     []string
	// Instances are the instances on this node (of any epoch, in any mode).
	Instances []InstanceStatus
	// RecentDeadLetters are the operator's latest dead letters on this
	// node (at most RecentDeadLetters), newest first.
	RecentDeadLetters []DeadLetter
}

// InstanceStatus describes one operator instance on a node.
type InstanceStatus struct {
	Index int
	Epoch int64
	Node  string
	// FirstGroup and EndGroup bound the key groups the instance owns.
	FirstGroup, EndGroup int
	// State is what the instance is doing on this node.
	State InstanceState
	// Restarts counts restarts since the node started.
	Restarts int
	// Processed counts records taken from the instance's inputs (including
	// those dead-lettered), over the instance's life: the count is stored
	// with its state and moves with it. Under a rescale each new instance
	// starts from what its first key group's previous owner stored.
	Processed int64
	// Produced counts records the instance produced (dead letters
	// excluded), over the instance's life like Processed: the count is
	// stored with its state and moves with it.
	Produced int64
	// DeadLetters counts records and timers sent to the dead-letter stream.
	DeadLetters int64
	// Queued is the number of records delivered to the instance and not
	// yet processed (its mailbox depth, in records).
	Queued int64
	// Blocked is the time the instance spent blocked by backpressure (a
	// full output buffer without credit from downstream) since it started
	// on this node.
	Blocked time.Duration
	// Busy is the time the instance spent working since it started on
	// this node: in ProcessRecord, ProcessTimer and ProcessEventTimer (a
	// batch's records, or the timers due, timed as one), and in a source's
	// Poll that produced records (an idle poll is not counted). Its growth
	// over an interval, divided by the interval, is the instance's busy
	// fraction, what the autoscaler's true processing rate divides by.
	Busy time.Duration
	// StateBytes estimates the disk space of the instance's key groups.
	StateBytes int64
	// TransientErrors counts the transient failures (core.ErrTransient)
	// of the instance's Poll, Flush and state log appends, e.g. while an
	// external system is unreachable: they are retried, not restarts.
	TransientErrors int64
	// Watermark is the instance's event-time watermark (zero before any;
	// the end of time, year 2262, once its input ended).
	Watermark time.Time
	// Finished says the instance's input ended (a source: its Poll
	// returned ErrEndOfStream), its event-time timers fired and it
	// forwarded end-of-stream.
	Finished bool
	// LastError is the most recent failure, if any.
	LastError string
	// FailedReason says why the instance was marked failed.
	FailedReason string
}

// Placed is the status of an instance on a node with its operator's name,
// as Collect takes it.
type Placed struct {
	Operator string
	Status   InstanceStatus
}

// Collect returns the status of a node's operators: those of topo in its
// order, then those of instances whose operator it no longer has, each
// with its instances sorted by epoch and index and its latest dead letters
// (from dl, which forgets the operators not among them).
func Collect(topo topology.Topology, insts []Placed, dl *DeadLetters) []OperatorStatus {
	byOp := make(map[string]*OperatorStatus)
	var names []string
	for _, spec := range topo.Operators {
		m := spec.Meta
		byOp[m.Name] = &OperatorStatus{Name: m.Name, Kind: spec.Kind, Parallelism: m.Parallelism, Epoch: spec.Epoch, Inputs: m.Inputs, Outputs: m.Outputs}
		names = append(names, m.Name)
	}
	for _, inst := range insts {
		st := byOp[inst.Operator]
		if st == nil {
			st = &OperatorStatus{Name: inst.Operator}
			byOp[inst.Operator] = st
			names = append(names, inst.Operator)
		}
		st.Instances = append(st.Instances, inst.Status)
	}
	out := make([]OperatorStatus, 0, len(names))
	for _, name := range names {
		st := byOp[name]
		slices.SortFunc(st.Instances, func(a, b InstanceStatus) int {
			if a.Epoch != b.Epoch {
				return int(a.Epoch - b.Epoch)
			}
			return a.Index - b.Index
		})
		st.RecentDeadLetters = dl.Recent(name)
		out = append(out, *st)
	}
	dl.Forget(byOp)
	return out
}
