// Package nodeenv is the contract between whoever starts a Sluice node
// process (the launcher, the Mesos framework, systemd, a container) and the
// process: the names of the environment variables a node reads. Writers set
// them by these names; node binaries read them through
// node.Config.RegisterNodeFlags and RegisterGuaranteeFlags, where each
// variable is the default of the flag of the same meaning. It has no
// dependencies, so that every side can import it.
package nodeenv

// Where the node is and who it is.
const (
	// NodeID is the node's id (flag -id); MesosTaskID is used when it is
	// unset.
	NodeID = "SLUICE_NODE_ID"
	// MesosTaskID is set by Mesos for every task.
	MesosTaskID = "MESOS_TASK_ID"
	// DataDir is the node's data directory (-data); when it is unset,
	// $MesosSandbox/data.
	DataDir = "SLUICE_DATA_DIR"
	// MesosSandbox is set by Mesos for every task: its sandbox directory.
	MesosSandbox = "MESOS_SANDBOX"
	// Consul is the Consul agent's address; empty means embedded
	// (-consul).
	Consul = "SLUICE_CONSUL"
	// Cluster is the cluster's name, the Consul service (-cluster).
	Cluster = "SLUICE_CLUSTER"
	// HTTP is the control API's address (-http).
	HTTP = "SLUICE_HTTP"
	// Bind is the node-to-node address (-bind).
	Bind = "SLUICE_BIND"
	// Advertise is the address other nodes use to reach Bind
	// (-advertise).
	Advertise = "SLUICE_ADVERTISE"
)

// What the node runs.
const (
	// Host lists, comma-separated, the operator kinds the node hosts
	// (-host); empty means all it has.
	Host = "SLUICE_HOST"
	// HostOnly, when not empty, makes the node deploy nothing itself: it
	// only hosts kinds, for operators deployed from manifests
	// (-host-only).
	HostOnly = "SLUICE_HOST_ONLY"
	// Launch, when not empty, runs a local launcher of operator
	// executables (-launch).
	Launch = "SLUICE_LAUNCH"
	// KeepRunning, when not empty, keeps an embedded node running once
	// every source finished (-keep-running).
	KeepRunning = "SLUICE_KEEP_RUNNING"
)

// What a crash may cost.
const (
	// Guarantee is exactly-once, at-least-once or none (-guarantee).
	Guarantee = "SLUICE_GUARANTEE"
	// Checkpoints is the checkpoint store (-checkpoints).
	Checkpoints = "SLUICE_CHECKPOINTS"
	// CheckpointInterval is the time between checkpoints
	// (-checkpoint-interval).
	CheckpointInterval = "SLUICE_CHECKPOINT_INTERVAL"
	// CheckpointsKept is how many complete checkpoints are kept
	// (-checkpoints-kept).
	CheckpointsKept = "SLUICE_CHECKPOINTS_KEPT"
	// RestoreFrom is the id of a checkpoint to start the cluster from
	// (-restore-from).
	RestoreFrom = "SLUICE_RESTORE_FROM"
)
