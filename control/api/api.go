package api

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/core"
)

// The JSON types of the control API, shared by the server (package
// control) and its clients (the sluice CLI, package manifest). Every endpoint answers errors as Error with a 4xx/5xx status.
//
//	GET    /healthz                         "ok", or 503 "unhealthy: REASON" (see NodeHealth)
//	GET    /v1/status                       ClusterStatus (this node's view of the whole cluster)
//	GET    /v1/node                         NodeStatus (this node only)
//	GET    /v1/nodes                        []NodeView
//	GET    /v1/operators                    []OperatorView
//	GET    /v1/operators/{name}             OperatorView
//	POST   /v1/operators                    body DeployRequest   → DeployResponse (201 created, 200 changed)
//	POST   /v1/deployments                  body DeploymentRequest → DeploymentResponse (several operators, one change)
//	PUT    /v1/operators/{name}/instances   body ScaleRequest    → DeployResponse
//	DELETE /v1/operators/{name}[?purge=1]                        → DeployResponse
//	GET    /v1/streams                      []StreamView
//	GET    /v1/graph[?format=dot]           text/plain: the stream graph as text, or Graphviz DOT
//	GET    /v1/checkpoints                  []CheckpointView (see checkpoints.go)
//	GET    /v1/checkpoints/{id}             CheckpointDetail
//	POST   /v1/checkpoints                  → CheckpointView (a savepoint, taken now)
//	GET    /v1/console                      ConsoleSnapshot; /v1/console/events streams them (see console.go)
//	POST   /v1/console/deploy               body ConsoleDeployRequest → DeploymentResponse
//
// A change that loses a race with another change (both read the same
// topology version) answers 409 with Error.Conflict set.
//
// When the node requires authentication (see package control), every
// endpoint but /healthz answers 401 without a valid credential (a bearer
// token, "Authorization: Bearer TOKEN", or a client certificate with a
// role), and 403 when the credential's Role does not allow the request:
// the GET endpoints need RoleRead, the others RoleAdmin.

// Error is the body of every error answer.
type Error struct {
	Error string `json:"error"`
	// Fields lists invalid manifest fields, each "field: problem".
	Fields []string `json:"fields,omitempty"`
	// Conflict is set on 409: the topology changed concurrently.
	Conflict bool `json:"conflict,omitempty"`
	// Role and Need are set on 403: the caller's role, and the role the
	// request needs.
	Role Role `json:"role,omitempty"`
	Need Role `json:"need,omitempty"`
}

// Role is what a credential (a token, a client certificate) may do with
// the control API. A 401 answer means no valid credential was given, a
// 403 that the credential's role does not allow the request.
type Role string

const (
	// RoleRead may read: GET /v1/status, /v1/node, /v1/nodes,
	// /v1/operators, /v1/streams, /v1/graph, /v1/checkpoints, /v1/autoscale, /metrics
	// and what the web console shows (/v1/console, /v1/console/events;
	// its pages at /ui/ need no credential).
	RoleRead Role = "read"
	// RoleAdmin may also change the topology: POST /v1/operators and
	// /v1/deployments, PUT /v1/operators/{name}/instances, DELETE
	// /v1/operators/{name} (with purge), take a savepoint (POST
	// /v1/checkpoints) and deploy manifest text (POST /v1/console/deploy).
	RoleAdmin Role = "admin"
)

// Roles lists the roles, least privileged first.
var Roles = []Role{RoleRead, RoleAdmin}

// String returns the role's name.
func (r Role) String() string { return string(r) }

// Allows reports whether r may make a request that needs role need.
func (r Role) Allows(need Role) bool {
	switch r {
	case RoleAdmin:
		return need == RoleAdmin || need == RoleRead
	case RoleRead:
		return need == RoleRead
	}
	return false
}

// ParseRole returns the role named s ("read" or "admin").
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if s == string(r) {
			return r, nil
		}
	}
	return "", fmt.Errorf("unknown role %q: want read or admin", s)
}

// Manifest describes one operator deployment, as in a manifest file (YAML or
// JSON). Zero fields take the kind's own metadata or the defaults.
type Manifest struct {
	// Name of the operator; required.
	Name string `json:"name" yaml:"name"`
	// Kind is the registered operator implementation to run; defaults to
	// Name.
	Kind string `json:"kind,omitempty" yaml:"kind,omitempty"`
	// Executable is a node binary (a "slug": a program calling node.Run with
	// the kind compiled in) that a launcher starts when no node hosts Kind.
	Executable string `json:"executable,omitempty" yaml:"executable,omitempty"`
	// Instances is the parallelism; 0 keeps the kind's default.
	Instances int `json:"instances,omitempty" yaml:"instances,omitempty"`
	// KeyGroups is fixed at the first deploy; 0 means the kind's or 256.
	KeyGroups int `json:"keyGroups,omitempty" yaml:"keyGroups,omitempty"`
	// Inputs, when set, replace the kind's declared inputs.
	Inputs []ManifestInput `json:"inputs,omitempty" yaml:"inputs,omitempty"`
	// Outputs, when set, replace the kind's declared outputs.
	Outputs []string `json:"outputs,omitempty" yaml:"outputs,omitempty"`
	// Resources for launchers (Mesos): CPUs, memory and disk in MB.
	CPUs float64 `json:"cpus,omitempty" yaml:"cpus,omitempty"`
	Mem  float64 `json:"mem,omitempty" yaml:"mem,omitempty"`
	Disk float64 `json:"disk,omitempty" yaml:"disk,omitempty"`
	// Retries bounds how often a launcher restarts the operator's process.
	Retries int `json:"retries,omitempty" yaml:"retries,omitempty"`
	// Environment for the operator's process when a launcher starts it.
	Environment map[string]string `json:"environment,omitempty" yaml:"environment,omitempty"`
	// Restart overrides the restart policy; durations as Go strings ("30s").
	Restart *ManifestRestart `json:"restart,omitempty" yaml:"restart,omitempty"`
	// Watermarks sets a source's watermark strategy (see
	// core.WatermarkStrategy); an empty mapping means monotonic event
	// times. Durations as Go strings ("2s").
	Watermarks *ManifestWatermarks `json:"watermarks,omitempty" yaml:"watermarks,omitempty"`
	// Window changes the windows of a window operator (see
	// core.WindowSpec; only on a kind that declares windows). With a type
	// it replaces the kind's windows whole; without one, its fields change
	// the kind's. Fixed once deployed. Durations as Go strings ("10s").
	Window *ManifestWindow `json:"window,omitempty" yaml:"window,omitempty"`
	// Autoscale turns on the autoscaler for the operator (see
	// core.AutoscaleSpec); absent keeps the kind's setting, off unless
	// it has one. Durations as Go strings ("5m").
	Autoscale *ManifestAutoscale `json:"autoscale,omitempty" yaml:"autoscale,omitempty"`
}

// ManifestAutoscale is the autoscaler settings of a Manifest (see
// core.AutoscaleSpec; zero fields take its defaults).
type ManifestAutoscale struct {
	Min               int     `json:"min,omitempty" yaml:"min,omitempty"`
	Max               int     `json:"max,omitempty" yaml:"max,omitempty"`
	TargetUtilization float64 `json:"targetUtilization,omitempty" yaml:"targetUtilization,omitempty"`
	ScaleDownAfter    string  `json:"scaleDownAfter,omitempty" yaml:"scaleDownAfter,omitempty"`
	CoolDown          string  `json:"coolDown,omitempty" yaml:"coolDown,omitempty"`
	DryRun            bool    `json:"dryRun,omitempty" yaml:"dryRun,omitempty"`
}

// ManifestWindow is the windows of a Manifest.
type ManifestWindow struct {
	// Type is tumbling, hopping, session, count or global.
	Type string `json:"type,omitempty" yaml:"type,omitempty"`
	// Size of tumbling and hopping windows, Slide of hopping ones, Gap of
	// sessions.
	Size  string `json:"size,omitempty" yaml:"size,omitempty"`
	Slide string `json:"slide,omitempty" yaml:"slide,omitempty"`
	Gap   string `json:"gap,omitempty" yaml:"gap,omitempty"`
	// Count of records of count windows.
	Count int64 `json:"count,omitempty" yaml:"count,omitempty"`
	// Lateness of event-time windows.
	Lateness string `json:"lateness,omitempty" yaml:"lateness,omitempty"`
	// Emit is on-close (the default) or on-update.
	Emit string `json:"emit,omitempty" yaml:"emit,omitempty"`
}

// ManifestWatermarks is the watermark strategy of a Manifest.
type ManifestWatermarks struct {
	OutOfOrderness string `json:"outOfOrderness,omitempty" yaml:"outOfOrderness,omitempty"`
	Idleness       string `json:"idleness,omitempty" yaml:"idleness,omitempty"`
	Interval       string `json:"interval,omitempty" yaml:"interval,omitempty"`
}

// ManifestInput is one input of a Manifest.
type ManifestInput struct {
	Stream string `json:"stream" yaml:"stream"`
	// Routing is "shuffle" (default), "round-robin", "group-by" or "broadcast".
	Routing string `json:"routing,omitempty" yaml:"routing,omitempty"`
}

// ManifestRestart is the restart policy of a Manifest.
type ManifestRestart struct {
	MaxRestarts     int    `json:"maxRestarts,omitempty" yaml:"maxRestarts,omitempty"`
	Window          string `json:"window,omitempty" yaml:"window,omitempty"`
	InitialBackoff  string `json:"initialBackoff,omitempty" yaml:"initialBackoff,omitempty"`
	MaxBackoff      string `json:"maxBackoff,omitempty" yaml:"maxBackoff,omitempty"`
	DeadLetterAfter int    `json:"deadLetterAfter,omitempty" yaml:"deadLetterAfter,omitempty"`
}

// DeployRequest is the body of POST /v1/operators.
type DeployRequest struct {
	Manifest Manifest `json:"manifest"`
}

// DeploymentRequest is the body of POST /v1/deployments: several
// operators deployed (created or updated) as one topology change, so that
// a pipeline starts whole. Either every manifest is valid and all are
// applied in one version, or none is.
type DeploymentRequest struct {
	Manifests []Manifest `json:"manifests"`
}

// DeploymentResponse answers a DeploymentRequest: each operator as now
// deployed, in request order, and the one topology version that holds
// them all.
type DeploymentResponse struct {
	Operators []OperatorView `json:"operators"`
	// Created lists, in request order, whether each operator is new.
	Created []bool `json:"created"`
	Version int64  `json:"version"`
}

// ScaleRequest is the body of PUT /v1/operators/{name}/instances.
type ScaleRequest struct {
	Instances int `json:"instances"`
}

// DeployResponse answers a change: the operator as now deployed and the
// topology version that holds it.
type DeployResponse struct {
	Operator OperatorView `json:"operator"`
	Version  int64        `json:"version"`
	// Created is true when the operator did not exist before.
	Created bool `json:"created,omitempty"`
}

// OperatorView is one deployed operator as the cluster runs it.
type OperatorView struct {
	Name       string       `json:"name"`
	Kind       string       `json:"kind"`
	Executable string       `json:"executable,omitempty"`
	Instances  int          `json:"instances"`
	KeyGroups  int          `json:"keyGroups"`
	Epoch      int64        `json:"epoch"`
	Inputs     []core.Input `json:"inputs"`
	Outputs    []string     `json:"outputs"`
	CPUs       float64      `json:"cpus,omitempty"`
	Mem        float64      `json:"mem,omitempty"`
	Disk       float64      `json:"disk,omitempty"`
	Retries    int          `json:"retries,omitempty"`
	DeployedAt time.Time    `json:"deployedAt"`
	// Window is a window operator's windows as deployed (durations in
	// nanoseconds).
	Window *core.WindowSpec `json:"window,omitempty"`
	// Autoscale is the autoscaler's settings as deployed (durations in
	// nanoseconds; absent: off).
	Autoscale *core.AutoscaleSpec `json:"autoscale,omitempty"`
	// State is "running" (every instance running), "starting" (some
	// awaiting state or placement), "pending" (no node can run it: see
	// Pending), "degraded" (some instance failed) or "unknown" (a node
	// did not answer).
	State string `json:"state"`
	// Pending says why instances are not running, if they are not.
	Pending string `json:"pending,omitempty"`
	// Placement lists every instance with the node running it.
	Placement []InstanceView `json:"placement"`
}

// InstanceView is one operator instance in an OperatorView.
type InstanceView struct {
	Index       int    `json:"index"`
	Node        string `json:"node"`
	State       string `json:"state"`
	FirstGroup  int    `json:"firstGroup"`
	EndGroup    int    `json:"endGroup"`
	Processed   int64  `json:"processed"`
	Produced    int64  `json:"produced"`
	Restarts    int    `json:"restarts"`
	DeadLetters int64  `json:"deadLetters"`
	LastError   string `json:"lastError,omitempty"`
}

// StreamView is one stream of the graph.
type StreamView struct {
	Name      string         `json:"name"`
	Producers []string       `json:"producers"`
	Consumers []StreamReader `json:"consumers"`
	// NoProducer and NoConsumer mark dangling streams.
	NoProducer bool `json:"noProducer,omitempty"`
	NoConsumer bool `json:"noConsumer,omitempty"`
	// Dropped counts records produced to the stream while no operator read
	// it, which were therefore discarded (without durability tracking, and
	// dead letters in every mode), summed over the nodes that answered
	// since they started.
	Dropped int64 `json:"dropped,omitempty"`
	// Held is the number of records producers hold now, waiting for an
	// operator to read the stream (with durability tracking).
	Held int64 `json:"held,omitempty"`
}

// StreamReader is one operator reading a stream.
type StreamReader struct {
	Operator string       `json:"operator"`
	Routing  core.Routing `json:"routing"`
}

// NodeView is one cluster member and its health as seen by the answering
// node.
type NodeView struct {
	cluster.Member
	// Healthy is true when the node's control API answered and the node
	// takes work (see NodeHealth); Error says why not.
	Healthy bool   `json:"healthy"`
	Error   string `json:"error,omitempty"`
	// Instances is the number of instances running there.
	Instances int `json:"instances"`
}

// ClusterStatus is the answer of GET /v1/status.
type ClusterStatus struct {
	Node            string         `json:"node"`
	TopologyVersion int64          `json:"topologyVersion"`
	Nodes           []NodeView     `json:"nodes"`
	Operators       []OperatorView `json:"operators"`
	// Pending lists what is waiting and why: operators no node can run,
	// instances waiting for their state.
	Pending []string `json:"pending"`
	// Launcher describes processes started by launchers (local or Mesos).
	Launcher []LaunchedView `json:"launcher,omitempty"`
	// Checkpoints is the coordinator's account of checkpoints
	// (exactly-once only).
	Checkpoints *CheckpointStatus `json:"checkpoints,omitempty"`
}

// LaunchedView is one process a launcher runs for an operator.
type LaunchedView struct {
	Operator string `json:"operator"`
	ID       string `json:"id"`
	Where    string `json:"where"`
	State    string `json:"state"`
	Restarts int    `json:"restarts"`
	Message  string `json:"message,omitempty"`
}
