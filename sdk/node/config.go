package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/sdk"
)

// NodeConfig is the node's own part of Config: its fields are promoted, so
// cfg.DataDir reads and sets Config.NodeConfig's. In a composite literal
// they are written inside it:
//
//	node.Config{NodeConfig: node.NodeConfig{DataDir: "data"}, Guarantee: sdk.AtLeastOnce}
//
// It holds knobs only: the node's collaborators (its cluster membership,
// topology store, checkpoint store, observer and announced kinds) are
// built by Start from Config's settings (Consul, Checkpoints, Telemetry,
// Launch). Each field means what the field of the same name of
// actors.Config means (go doc actors.Config has them in full).
type NodeConfig struct {
	// NodeID names the node in logs, status and membership; empty means the
	// host name.
	NodeID string
	// DataDir is where the node's Pebble database lives; empty means
	// "./sluice-data".
	DataDir string
	// Logger receives the runtime's logs; nil means slog.Default().
	Logger *slog.Logger
	// CommitInterval is the longest time an instance's state writes stay
	// uncommitted; 0 means 200 ms (exactly-once: the checkpoint interval,
	// at most actors.MaxExactlyOnceCommitInterval).
	CommitInterval time.Duration
	// BatchSize is the number of records sent between two instances in one
	// message when there is enough traffic; 0 means 256.
	BatchSize int
	// RemoteBatchSize is BatchSize for a destination instance on another
	// node; 0 means 1024.
	RemoteBatchSize int
	// BatchBytes ends a batch before BatchSize records once its records
	// reach this many bytes; 0 means 1 MiB.
	BatchBytes int
	// MaxRecordBytes is the largest record (key, value and headers)
	// Produce accepts (sdk.ErrRecordTooLarge); 0 means 4 MiB. Every node
	// of a cluster must have the same BatchBytes, BatchSize,
	// RemoteBatchSize and MaxRecordBytes.
	MaxRecordBytes int
	// Credits is the number of unprocessed batches a producer may have
	// sent to one destination instance on its own node; 0 means 8.
	Credits int
	// RemoteCredits is Credits for a destination instance on another
	// node; 0 means 8.
	RemoteCredits int
	// BufferBatches is how many batches a producer may hold for one
	// destination that has no credit before it stops taking input; 0
	// means 8.
	BufferBatches int
	// NoSync commits state without waiting for fsync (tests and benchmarks
	// on slow disks).
	NoSync bool
	// Host lists the operator kinds this process hosts in a cluster; empty
	// means every kind it has a factory for.
	Host []string
	// AtLeastOnce is the old spelling of Config.Guarantee: AtLeastOnce.
	AtLeastOnce bool
	// StateLog, when set, mirrors every instance's committed state to an
	// external log (e.g. kafka.StateLog: at least once, state that
	// survives a crash).
	StateLog sdk.StateLog
	// OnEvent, when set, is called synchronously for every instance and
	// cluster event (see status.Event).
	OnEvent func(status.Event)
	// MinFreeDisk is the free space, in bytes, the node keeps in reserve
	// on its data directory's file system; 0 means 64 MiB, negative turns
	// the check off.
	MinFreeDisk int64
	// DiskCheckInterval is the time between two checks of the node's
	// health; 0 means 250 ms.
	DiskCheckInterval time.Duration
}

// actors returns n as the runtime node's configuration, without the
// collaborators Start adds.
func (n NodeConfig) actors() actors.Config {
	return actors.Config{
		NodeID: n.NodeID, DataDir: n.DataDir, Logger: n.Logger, CommitInterval: n.CommitInterval,
		BatchSize: n.BatchSize, RemoteBatchSize: n.RemoteBatchSize, BatchBytes: n.BatchBytes, MaxRecordBytes: n.MaxRecordBytes,
		Credits: n.Credits, RemoteCredits: n.RemoteCredits, BufferBatches: n.BufferBatches, NoSync: n.NoSync, Host: n.Host,
		AtLeastOnce: n.AtLeastOnce, StateLog: n.StateLog, OnEvent: n.OnEvent, MinFreeDisk: n.MinFreeDisk, DiskCheckInterval: n.DiskCheckInterval,
	}
}

// nodeConfigOf returns the knobs of c (its collaborators dropped).
func nodeConfigOf(c actors.Config) NodeConfig {
	return NodeConfig{
		NodeID: c.NodeID, DataDir: c.DataDir, Logger: c.Logger, CommitInterval: c.CommitInterval,
		BatchSize: c.BatchSize, RemoteBatchSize: c.RemoteBatchSize, BatchBytes: c.BatchBytes, MaxRecordBytes: c.MaxRecordBytes,
		Credits: c.Credits, RemoteCredits: c.RemoteCredits, BufferBatches: c.BufferBatches, NoSync: c.NoSync, Host: c.Host,
		AtLeastOnce: c.AtLeastOnce, StateLog: c.StateLog, OnEvent: c.OnEvent, MinFreeDisk: c.MinFreeDisk, DiskCheckInterval: c.DiskCheckInterval,
	}
}

// Defaults of Config's own fields (NodeConfig's are actors.DefaultConfig's).
const (
	// DefaultClusterName is the Consul service name of a cluster when
	// Config.ClusterName is empty.
	DefaultClusterName = "sluice"
	// DefaultStopTimeout bounds Run's shutdown when Config.StopTimeout is 0.
	DefaultStopTimeout = 30 * time.Second
)

// DefaultConfig returns the configuration that zero fields of a Config
// mean: the embedded mode with actors.DefaultConfig's node settings.
func DefaultConfig() Config {
	return Config{NodeConfig: nodeConfigOf(actors.DefaultConfig()), ClusterName: DefaultClusterName, StopTimeout: DefaultStopTimeout}
}

// withDefaults fills the zero fields of Config's own that have a default
// (the node fills NodeConfig's).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.DataDir == "" {
		c.DataDir = d.DataDir
	}
	if c.ClusterName == "" {
		c.ClusterName = d.ClusterName
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = d.StopTimeout
	}
	return c
}

// Validate reports every invalid field of c, each error naming the field
// and the fix. Start calls it first.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("Config.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if err := c.NodeConfig.actors().Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Launch && c.Consul == "" {
		bad("Launch", "runs the executables of deployed operators as processes that join this node's cluster, and an embedded node has none: "+
			"give Consul (-consul) to run a cluster, or leave Launch (-launch) out")
	}
	if c.StopTimeout < 0 {
		bad("StopTimeout", "must be ≥ 0 (0: %v), got %v", DefaultStopTimeout, c.StopTimeout)
	}
	if c.CheckpointInterval < 0 {
		bad("CheckpointInterval", "must be ≥ 0 (0: 1s), got %v", c.CheckpointInterval)
	}
	if c.CheckpointsKept < 0 {
		bad("CheckpointsKept", "must be ≥ 0 (0: 3), got %d", c.CheckpointsKept)
	}
	switch c.Guarantee {
	case sdk.ExactlyOnce, sdk.AtLeastOnce, sdk.NoGuarantee:
	default:
		bad("Guarantee", "unknown guarantee %d: use sdk.ExactlyOnce, sdk.AtLeastOnce or sdk.NoGuarantee", c.Guarantee)
	}
	if c.RestoreFrom != "" {
		if id, err := strconv.ParseUint(c.RestoreFrom, 10, 64); err != nil || id == 0 {
			bad("RestoreFrom", "%q is not a checkpoint id; use one that sluice checkpoints lists", c.RestoreFrom)
		}
	}
	for _, a := range []struct{ field, addr string }{{"Bind", c.Bind}, {"Advertise", c.Advertise}, {"HTTP", c.HTTP}} {
		if a.addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			bad(a.field, "%q is not host:port (e.g. 127.0.0.1:7000, :0): %v", a.addr, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node: invalid config: %w", err)
	}
	return nil
}
