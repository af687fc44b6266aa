package sdk

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/actors"
)

// NodeConfig is the node's own part of Config (see actors.Config): its
// fields are promoted, so cfg.DataDir reads and sets Config.NodeConfig's.
// In a composite literal they are written inside it:
//
//	sdk.Config{NodeConfig: sdk.NodeConfig{DataDir: "data"}, Guarantee: sdk.AtLeastOnce}
//
// Its fields (go doc actors.Config has them in full):
//
//	NodeID string                   // NodeID names the node in logs, status and membership; empty means the host name.
//	DataDir string                  // DataDir is where the node's Pebble database lives; empty means "./sluice-data".
//	Logger *slog.Logger             // Logger receives the runtime's logs; nil means slog.Default().
//	CommitInterval time.Duration    // CommitInterval is the longest time an instance's state writes stay uncommitted; 0 …
//	BatchSize int                   // BatchSize is the number of records sent between two instances in one message when …
//	RemoteBatchSize int             // RemoteBatchSize is BatchSize for a destination instance on another node, where each …
//	BatchBytes int                  // BatchBytes ends a batch before BatchSize records once its records (key, value and …
//	MaxRecordBytes int              // MaxRecordBytes is the largest record (key, value and headers) Produce accepts; a …
//	Credits int                     // Credits is the number of batches a producer may have sent to one destination instance …
//	RemoteCredits int               // RemoteCredits is Credits for a destination instance on another node: a batch and its …
//	BufferBatches int               // BufferBatches is how many batches a producer may hold for one destination that has no …
//	NoSync bool                     // NoSync commits state without waiting for fsync (tests and benchmarks on slow disks).
//	Host []string                   // Host lists the operator kinds this node hosts; empty means every kind it has a factory …
//	Announce []string               // Announce lists extra kinds announced in the membership without a factory, such as the …
//	Cluster *ClusterConfig          // Cluster, when set, makes the node join a cluster; nil runs the embedded single-node mode.
//	Store topology.Store            // Store keeps the topology (the deployed operators); nil means the node's own database …
//	LocalStore func(*persistence.DB) topology.Store // LocalStore builds the embedded mode's topology store on the node's own database; Start …
//	AtLeastOnce bool                // AtLeastOnce turns on durability tracking: replayable sources (Kafka) commit positions …
//	Checkpoints *CheckpointConfig   // Checkpoints, when set, makes the node exactly-once: it takes part in consistent …
//	StateLog StateLog               // StateLog, when set, mirrors every instance's committed state to an external log (a …
//	Observer Observer               // Observer, when set, receives traces and metrics (see Observer).
//	OnEvent func(Event)             // OnEvent, when set, is called (synchronously, from the instance's goroutine) when an …
//	MinFreeDisk int64               // MinFreeDisk is the free space, in bytes, the node keeps in reserve on its data …
//	DiskCheckInterval time.Duration // DiskCheckInterval is the time between two checks of the node's health (free disk, …
type NodeConfig = actors.Config

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
	return Config{NodeConfig: actors.DefaultConfig(), ClusterName: DefaultClusterName, StopTimeout: DefaultStopTimeout}
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
	n := c.NodeConfig
	for _, set := range []struct {
		field string
		isSet bool
		from  string
	}{
		{"Cluster", n.Cluster != nil, "Consul, Bind, Advertise and NodeSecurity"},
		{"Store", n.Store != nil, "Consul (or the node's own database when embedded)"},
		{"LocalStore", n.LocalStore != nil, "the embedded mode (topology/pebble on the node's own database)"},
		{"Checkpoints", n.Checkpoints != nil, "Checkpoints, CheckpointInterval, CheckpointsKept and RestoreFrom"},
		{"Observer", n.Observer != nil, "Telemetry"},
		{"Announce", n.Announce != nil, "Launch"},
	} {
		if set.isSet {
			bad("NodeConfig."+set.field, "set by Start from %s; leave it zero", set.from)
		}
	}
	if err := n.Validate(); err != nil {
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
	case ExactlyOnce, AtLeastOnce, NoGuarantee:
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
		return fmt.Errorf("sdk: invalid config: %w", err)
	}
	return nil
}
