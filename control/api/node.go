package api

import (
	"time"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/core"
)

// NodeStatus is the answer of GET /v1/node: one node alone, as it sees
// itself. Nodes ask each other for it to build the cluster's status.
type NodeStatus struct {
	Node    string   `json:"node"`
	Address string   `json:"address"`
	HTTP    string   `json:"http"`
	Kinds   []string `json:"kinds"`
	// Members is the cluster as this node sees it.
	Members []cluster.Member `json:"members"`
	// Operators lists the operators with instances on this node.
	Operators []NodeOperator `json:"operators"`
	// Pending lists instances waiting (for their state, say) and why.
	Pending []string `json:"pending"`
	// Queued and Buffered count records in mailboxes and in producers'
	// output buffers on this node.
	Queued   int64 `json:"queued"`
	Buffered int64 `json:"buffered"`
	// Streams counts, per stream, records produced here while no operator
	// read it (dropped, or held until one does).
	Streams []StreamCount `json:"streams,omitempty"`
	// Launched lists the processes this node's launcher runs.
	Launched []LaunchedView `json:"launched,omitempty"`
	// Checkpoints is this node's account of checkpoints (exactly-once
	// only): the coordinator's is the cluster's.
	Checkpoints *CheckpointStatus `json:"checkpoints,omitempty"`
	// Process is the node process's resource use.
	Process *ProcessStats `json:"process,omitempty"`
	// Health says whether the node takes work, and why not.
	Health *NodeHealth `json:"health,omitempty"`
	// Events are the node's latest cluster events, oldest first.
	Events []Event `json:"events,omitempty"`
}

// Event is a cluster event as a node saw it: a member joined, left or was
// lost (left without announcing it: crashed, killed, unreachable), a
// rollback began (on the checkpoint coordinator), instances were restored
// from a checkpoint, an operator was deployed, scaled or killed.
type Event struct {
	Time time.Time `json:"time"`
	// Node is the node that saw it.
	Node string `json:"node"`
	// What is member-joined, member-left, node-lost, rollback, restored,
	// deployed, scaled or killed.
	What     string `json:"what"`
	Operator string `json:"operator,omitempty"`
	// Peer is the member that joined, left or was lost.
	Peer string `json:"peer,omitempty"`
	// Checkpoint is the checkpoint restored from (a string: ids are 64
	// bits, more than a JavaScript number holds exactly).
	Checkpoint uint64 `json:"checkpoint,omitempty,string"`
	Detail     string `json:"detail,omitempty"`
}

// NodeOperator is one operator in a NodeStatus, with its instances on that
// node.
type NodeOperator struct {
	Name        string       `json:"name"`
	Kind        string       `json:"kind"`
	Parallelism int          `json:"parallelism"`
	Epoch       int64        `json:"epoch"`
	Inputs      []core.Input `json:"inputs"`
	Outputs     []string     `json:"outputs"`
	// Instances are the instances on this node, of any epoch, in any
	// state.
	Instances []NodeInstance `json:"instances"`
	// RecentDeadLetters are the operator's latest dead letters on this
	// node (a few), newest first.
	RecentDeadLetters []DeadLetter `json:"recentDeadLetters,omitempty"`
}

// DeadLetter is a record or timer an instance sent to its operator's
// dead-letter stream, as a node keeps it to show: the header sluice-error
// says why.
type DeadLetter struct {
	Time  time.Time `json:"time"`
	Node  string    `json:"node"`
	Index int       `json:"index"`
	// Key and Value are the record's bytes as text (invalid UTF-8
	// replaced), each at most its first 256 bytes; KeyBytes and
	// ValueBytes are their whole lengths. Headers are at most 32, each cut
	// to 1 KiB.
	Key        string   `json:"key"`
	KeyBytes   int      `json:"keyBytes"`
	Value      string   `json:"value"`
	ValueBytes int      `json:"valueBytes"`
	Headers    []Header `json:"headers"`
}

// Header is one record header.
type Header struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// NodeInstance is one operator instance on a node.
type NodeInstance struct {
	Index int    `json:"index"`
	Epoch int64  `json:"epoch"`
	Node  string `json:"node"`
	// FirstGroup and EndGroup bound the key groups it owns: [first, end).
	FirstGroup int `json:"firstGroup"`
	EndGroup   int `json:"endGroup"`
	// State is "awaiting" (its state), "running", "restarting", "failed",
	// "released" (moved elsewhere) or "stopped".
	State    string `json:"state"`
	Restarts int    `json:"restarts"`
	// Processed and Produced count records over the instance's life (they
	// move with its state).
	Processed   int64 `json:"processed"`
	Produced    int64 `json:"produced"`
	DeadLetters int64 `json:"deadLetters"`
	// Queued is its mailbox depth in records.
	Queued int64 `json:"queued"`
	// BlockedNanos is the time it spent blocked by backpressure on this
	// node, in nanoseconds.
	BlockedNanos int64 `json:"blockedNanos"`
	// BusyNanos is the time it spent working on this node (in its
	// operator's callbacks; a source's polls that produced records), in
	// nanoseconds: its growth over an interval, divided by the interval, is
	// its busy fraction.
	BusyNanos int64 `json:"busyNanos"`
	// Latency is its latency quantiles when the node's telemetry times
	// records (see Latency).
	Latency *Latency `json:"latency,omitempty"`
	// StateBytes estimates the disk space of its key groups.
	StateBytes int64 `json:"stateBytes"`
	// TransientErrors counts retried failures of Poll and Flush.
	TransientErrors int64 `json:"transientErrors"`
	// Watermark is its event-time watermark (absent before it has one;
	// 2262-04-11, the end of time, once its input ended); Finished says
	// its input ended and it forwarded end-of-stream.
	Watermark    *time.Time `json:"watermark,omitempty"`
	Finished     bool       `json:"finished,omitempty"`
	LastError    string     `json:"lastError,omitempty"`
	FailedReason string     `json:"failedReason,omitempty"`
}

// StreamCount counts the records of one stream that found no reader on a
// node.
type StreamCount struct {
	Stream string `json:"stream"`
	// Dropped counts records discarded since the node started.
	Dropped int64 `json:"dropped"`
	// Held is the number of records producers on the node hold now,
	// waiting for a reader.
	Held int64 `json:"held"`
}
