package api

import "time"

// The web console's endpoints (package console serves its pages at /ui/):
//
//	GET  /v1/console          ConsoleSnapshot (rates over the time since the previous snapshot this node took)
//	GET  /v1/console/events   text/event-stream: "event: snapshot" with a ConsoleSnapshot every second
//	POST /v1/console/deploy   body ConsoleDeployRequest → DeploymentResponse (manifest text, YAML or JSON)
//
// The GET endpoints need RoleRead, the deploy RoleAdmin, like the rest of
// the API; the console sends the token it asks for as a bearer header.

// ConsoleSnapshot is the whole cluster as the console shows it at one
// moment, with rates.
type ConsoleSnapshot struct {
	Time            time.Time `json:"time"`
	Node            string    `json:"node"`
	TopologyVersion int64     `json:"topologyVersion"`
	// Interval is the time, in seconds, the rates are measured over: since
	// the previous sample of the answering node (0 on its first).
	Interval  float64           `json:"interval"`
	Nodes     []ConsoleNode     `json:"nodes"`
	Operators []ConsoleOperator `json:"operators"`
	Streams   []ConsoleStream   `json:"streams"`
	// Pending, Launcher and Checkpoints are as in ClusterStatus.
	Pending     []string          `json:"pending"`
	Launcher    []LaunchedView    `json:"launcher,omitempty"`
	Checkpoints *CheckpointStatus `json:"checkpoints,omitempty"`
	// Events is the timeline: the latest cluster events of the nodes that
	// answered, newest first (at most 100).
	Events []ConsoleEvent `json:"events"`
}

// ConsoleEvent is one entry of the console's timeline: an Event as one
// or more nodes saw it (each survivor sees a member lost).
type ConsoleEvent struct {
	Time time.Time `json:"time"`
	// Nodes are the nodes that reported it, the first first.
	Nodes      []string `json:"nodes"`
	What       string   `json:"what"`
	Operator   string   `json:"operator,omitempty"`
	Peer       string   `json:"peer,omitempty"`
	Checkpoint uint64   `json:"checkpoint,omitempty,string"`
	Detail     string   `json:"detail,omitempty"`
}

// ConsoleNode is one member with its load.
type ConsoleNode struct {
	NodeView
	// Queued and Buffered are the node's records in mailboxes and in
	// output buffers (see NodeStatus).
	Queued   int64 `json:"queued"`
	Buffered int64 `json:"buffered"`
	// Pending lists the node's instances waiting (a handoff of their
	// state, say) and why.
	Pending []string `json:"pending,omitempty"`
	// Process is the node process's resource use; nil when it did not
	// answer.
	Process *ProcessStats `json:"process,omitempty"`
	// CPU is the process's CPU use over the interval, in cores (1.5: one
	// and a half cores busy).
	CPU float64 `json:"cpu"`
}

// ConsoleOperator is one deployed operator with its rates and pressure.
// Its Placement is left out (null): Detail lists every instance, with its
// rates.
type ConsoleOperator struct {
	OperatorView
	// InRate and OutRate are records/s taken from the inputs and produced,
	// summed over the instances.
	InRate  float64 `json:"inRate"`
	OutRate float64 `json:"outRate"`
	// Queued is the records in the instances' mailboxes (their depth).
	Queued int64 `json:"queued"`
	// Blocked is the share of the interval (0–1) the instances spent
	// blocked by backpressure (no credit from downstream), the highest of
	// any instance.
	Blocked     float64           `json:"blocked"`
	Restarts    int               `json:"restarts"`
	DeadLetters int64             `json:"deadLetters"`
	Detail      []ConsoleInstance `json:"detail"`
	// RecentDeadLetters are the operator's latest dead letters (a few
	// from each node, newest first).
	RecentDeadLetters []DeadLetter `json:"recentDeadLetters"`
}

// ConsoleInstance is one placed instance with its rates.
type ConsoleInstance struct {
	InstanceView
	InRate          float64 `json:"inRate"`
	OutRate         float64 `json:"outRate"`
	Queued          int64   `json:"queued"`
	Blocked         float64 `json:"blocked"`
	StateBytes      int64   `json:"stateBytes"`
	TransientErrors int64   `json:"transientErrors"`
	FailedReason    string  `json:"failedReason,omitempty"`
	// Watermark and Finished are as in NodeInstance.
	Watermark *time.Time `json:"watermark,omitempty"`
	Finished  bool       `json:"finished,omitempty"`
	// Latency is nil when the node's telemetry is off or timed none of
	// its records yet.
	Latency *Latency `json:"latency,omitempty"`
}

// Latency is an instance's latency quantiles in milliseconds, estimated
// by the node's telemetry from the records it times (a sample), since the
// instance first timed one on that node. EndToEnd is from the record's
// event time to the end of its processing; 0 without event times.
type Latency struct {
	Timed       uint64  `json:"timed"`
	ProcessP50  float64 `json:"processP50Ms"`
	ProcessP99  float64 `json:"processP99Ms"`
	EndToEndP50 float64 `json:"endToEndP50Ms"`
	EndToEndP99 float64 `json:"endToEndP99Ms"`
}

// ConsoleStream is one stream with the rate its producers write to it.
type ConsoleStream struct {
	StreamView
	// Rate is records/s produced by the stream's producers (each
	// producer's whole output: an operator writing to several streams
	// counts towards each).
	Rate float64 `json:"rate"`
}

// ProcessStats is a node process's resource use (in NodeStatus).
type ProcessStats struct {
	// CPUSeconds is the CPU time the process used since it started (user
	// and system).
	CPUSeconds float64 `json:"cpuSeconds"`
	// HeapBytes is the Go heap in use; SysBytes what the Go runtime holds
	// from the system.
	HeapBytes  uint64 `json:"heapBytes"`
	SysBytes   uint64 `json:"sysBytes"`
	Goroutines int    `json:"goroutines"`
	CPUs       int    `json:"cpus"`
}

// ConsoleDeployRequest is the body of POST /v1/console/deploy: manifest
// text as a file holds it (YAML or JSON, one or several manifests; see
// package manifest). The server parses it and deploys the manifests as
// POST /v1/deployments does; errors name the line and field.
type ConsoleDeployRequest struct {
	Text string `json:"text"`
}
