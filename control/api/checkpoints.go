package api

import "time"

// Checkpoint endpoints (exactly-once nodes; others answer 404 with Error):
//
//	GET    /v1/checkpoints        []CheckpointView, newest first (read from the shared store)
//	GET    /v1/checkpoints/{id}   CheckpointDetail
//	POST   /v1/checkpoints        → CheckpointView of a savepoint taken now (asked of the coordinator)
//
// Any node answers: the list and the details are read from the checkpoint
// store every node shares, and a savepoint asked of a node that does not
// coordinate is forwarded to the coordinator over the node-to-node
// connection.

// CheckpointView is one complete checkpoint kept in the store.
type CheckpointView struct {
	// ID is the checkpoint's id (it grows with time: nanoseconds since
	// 1970 when taken).
	ID        uint64    `json:"id"`
	Savepoint bool      `json:"savepoint,omitempty"`
	Started   time.Time `json:"started"`
	Completed time.Time `json:"completed"`
	// Duration is how long it took, in milliseconds.
	DurationMS int64 `json:"durationMs"`
	// Uploaded is what it sent to the store; Size what it references in
	// all (files shared with earlier checkpoints are sent once).
	Uploaded int64 `json:"uploaded"`
	Size     int64 `json:"size"`
	// Instances counts the operator instances whose key groups it holds.
	Instances       int   `json:"instances"`
	TopologyVersion int64 `json:"topologyVersion"`
}

// CheckpointDetail is one checkpoint with what each node's part holds.
type CheckpointDetail struct {
	CheckpointView
	Nodes []CheckpointNode `json:"nodes"`
	// Note says what the metadata does not describe: source positions and
	// sinks' pending commits are operator state, inside the key groups.
	Note string `json:"note,omitempty"`
}

// CheckpointNode is one node's part of a checkpoint.
type CheckpointNode struct {
	Node string `json:"node"`
	// DB names the node's database.
	DB       string `json:"db"`
	Files    int    `json:"files"`
	Size     int64  `json:"size"`
	Uploaded int64  `json:"uploaded"`
	// Instances are the instances whose key groups the part holds.
	Instances []CheckpointInstance `json:"instances"`
}

// CheckpointInstance is the key groups [FirstGroup, EndGroup) of one
// operator instance in a checkpoint.
type CheckpointInstance struct {
	Operator   string `json:"operator"`
	Epoch      int64  `json:"epoch"`
	Index      int    `json:"index"`
	FirstGroup int    `json:"firstGroup"`
	EndGroup   int    `json:"endGroup"`
	// StateBytes estimates the size of its state when taken.
	StateBytes int64 `json:"stateBytes"`
}

// CheckpointStatus is the checkpoint section of a status: the
// coordinator's account, as NodeStatus.Checkpoints (each node's own) and
// ClusterStatus.Checkpoints (the coordinator's).
type CheckpointStatus struct {
	// Coordinator is the node that coordinates checkpoints.
	Coordinator string `json:"coordinator"`
	// Completed and Failed count checkpoints since the coordinator started.
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	// Last is the newest complete checkpoint (0: none); LastAgeMS how long
	// ago it completed, in milliseconds.
	Last          uint64    `json:"last"`
	LastSavepoint bool      `json:"lastSavepoint,omitempty"`
	LastTime      time.Time `json:"lastTime,omitzero"`
	LastAgeMS     int64     `json:"lastAgeMs"`
	// LastDurationMS, LastUploaded and LastSize describe the newest
	// checkpoint this coordinator completed.
	LastDurationMS int64 `json:"lastDurationMs"`
	LastUploaded   int64 `json:"lastUploaded"`
	LastSize       int64 `json:"lastSize"`
	// InProgress is the checkpoint being taken (0: none).
	InProgress uint64 `json:"inProgress,omitempty"`
	// ConsecutiveFailures counts failures since the last completion;
	// LastError says why the newest failed, LastFailure when.
	ConsecutiveFailures int64     `json:"consecutiveFailures"`
	LastError           string    `json:"lastError,omitempty"`
	LastFailure         time.Time `json:"lastFailure,omitzero"`
	// Generation is the rollback generation; Rollbacks counts rollbacks.
	Generation uint64 `json:"generation"`
	Rollbacks  int64  `json:"rollbacks"`
	// Error is set when the status could not be read from the coordinator.
	Error string `json:"error,omitempty"`
}
