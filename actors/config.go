package actors

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/actors/transport"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/topology"
)

// Config configures a Node. Zero fields take the defaults of DefaultConfig.
type Config struct {
	// NodeID names the node in logs, status and membership; empty means the
	// host name.
	NodeID string
	// DataDir is where the node's Pebble database lives; empty means
	// "./sluice-data".
	DataDir string
	// Logger receives the runtime's logs; nil means slog.Default().
	Logger *slog.Logger
	// CommitInterval is the longest time an instance's state writes stay
	// uncommitted; 0 means 200 ms, or with Checkpoints (exactly-once) the
	// checkpoint interval, at most MaxExactlyOnceCommitInterval: a crash
	// then rolls back to a checkpoint, and every checkpoint commits the
	// state anyway, so commits in between only bound the memory that
	// uncommitted writes take, and each commit writes to Pebble every key
	// changed since the last.
	CommitInterval time.Duration
	// BatchSize is the number of records sent between two instances in one
	// message when there is enough traffic; 0 means 256.
	BatchSize int
	// RemoteBatchSize is BatchSize for a destination instance on another
	// node, where each batch costs more: an envelope and a gRPC frame, an
	// ack back across the network, and a hop through both nodes'
	// dispatchers. 0 means 1024: in the cross-node benchmark 1024 records
	// a batch with 8 credits (the same 8,192 records in flight as 256
	// with 32) ran at 3.09–3.42× raw protoactor, against 2.48–3.12× (six
	// alternating rounds of 3 runs), with 10–20 % less CPU a record.
	RemoteBatchSize int
	// BatchBytes ends a batch before BatchSize records once its records
	// (key, value and headers) reach this many bytes; a record that would
	// take a batch past it goes in the next. 0 means 1 MiB. With
	// MaxRecordBytes it bounds each message between nodes (see
	// MaxRecordBytes).
	BatchBytes int
	// MaxRecordBytes is the largest record (key, value and headers)
	// Produce accepts; a larger one is refused with ErrRecordTooLarge. 0
	// means 4 MiB. A node takes messages from its peers of up to a bundle
	// of 16 batches of max(BatchBytes, MaxRecordBytes) each, with their
	// framing, and refuses larger ones, so every node of a cluster must
	// have the same BatchBytes, BatchSize, RemoteBatchSize and
	// MaxRecordBytes.
	MaxRecordBytes int
	// Credits is the number of batches a producer may have sent to one
	// destination instance on its own node that it has not yet processed.
	// 0 means 8.
	Credits int
	// RemoteCredits is Credits for a destination instance on another
	// node: a batch and its ack cross the network and two nodes' mailboxes,
	// so more records must be in flight to keep the destination busy
	// (with 8 batches of 256, a node sending to another was held by
	// backpressure about half of the time while neither node's CPU was
	// busy). 0 means 8, of RemoteBatchSize records each.
	RemoteCredits int
	// BufferBatches is how many batches a producer may hold for one
	// destination that has no credit before it stops taking input, so that
	// a destination that is briefly slow or unreachable (a node that just
	// died and is not yet detected) does not stall the producer's other
	// destinations. Memory per edge is bounded by (Credits+BufferBatches)×
	// BatchSize records. 0 means 8.
	BufferBatches int
	// NoSync commits state without waiting for fsync (tests and benchmarks
	// on slow disks). A process crash then still keeps what was committed;
	// a machine crash may not.
	NoSync bool
	// Host lists the operator kinds this node hosts; empty means every kind
	// it has a factory for. The others are still routed to (on nodes that
	// host them).
	Host []string
	// Announce lists extra kinds announced in the membership without a
	// factory, such as the launcher's pseudo kind.
	Announce []string
	// Runtimes make the factories of operators whose code is data (a
	// core.RuntimeWasm operator's module) from their deployed metadata;
	// with the wasm runtime the node announces core.WasmKind and hosts
	// every operator of that kind. nil: none.
	Runtimes map[core.Runtime]core.MetaFactory
	// Cluster, when set, makes the node join a cluster; nil runs the
	// embedded single-node mode.
	Cluster *ClusterConfig
	// Store keeps the topology (the deployed operators); nil means the
	// store LocalStore builds on the node's own database (embedded mode).
	// A cluster shares one store, e.g. a topology/consul store guarded by
	// topology.NewGuard.
	Store topology.Store
	// LocalStore builds the embedded mode's topology store on the node's
	// own database (topology/pebble.Local, which the composition root
	// passes: the runtime does not import a backend); required when Store
	// is nil, called once by StartNode after it opened the database.
	LocalStore func(*persistence.DB) topology.Store
	// AtLeastOnce turns on durability tracking: replayable sources (Kafka)
	// commit positions only when everything they produced has its effects
	// durable downstream, and rewind after a node crash (see durability.go).
	AtLeastOnce bool
	// Checkpoints, when set, makes the node exactly-once: it takes part in
	// consistent distributed checkpoints kept in Checkpoints.Store, and
	// after a node crash every instance rolls back to the last complete
	// one (see package actors/ckpt). AtLeastOnce is then ignored.
	Checkpoints *CheckpointConfig
	// StateLog, when set, mirrors every instance's committed state to an
	// external log (a Kafka changelog), from which an instance whose node
	// crashed is restored where it restarts (see StateLog).
	StateLog StateLog
	// Observer, when set, receives traces and metrics (see status.Observer).
	Observer status.Observer
	// OnEvent, when set, is called (synchronously, from the instance's
	// or the coordinator's goroutine) for every status.Event: when an instance
	// becomes active, is released or stops, and for the cluster events
	// Node.Events keeps.
	OnEvent func(status.Event)
	// MinFreeDisk is the free space, in bytes, the node keeps in reserve
	// on its data directory's file system: below it the node is unhealthy
	// and takes no work until twice as much is free (see status.Health). 0 means
	// 64 MiB; a negative value turns the check off.
	MinFreeDisk int64
	// DiskCheckInterval is the time between two checks of the node's
	// health (free disk, state database); 0 means 250 ms.
	DiskCheckInterval time.Duration
}

// ClusterConfig configures a node's membership in a cluster.
type ClusterConfig struct {
	// Discovery is the membership backend, e.g. cluster/consul.
	Discovery cluster.Discovery
	// BindAddr is the host:port for node-to-node traffic (protoactor
	// remote); port 0 picks a free port. Empty means "127.0.0.1:0".
	BindAddr string
	// AdvertiseAddr is the host:port other nodes use, if not BindAddr.
	AdvertiseAddr string
	// HTTPAddr is the node's status/metrics HTTP address, announced in the
	// membership.
	HTTPAddr string
	// Version is announced in the membership.
	Version string
	// Settle delays acting on a membership change, so that changes arriving
	// together are applied together; 0 means 200 ms.
	Settle time.Duration
	// LeaveQuiet is how long a leaving node waits, after handing everything
	// off, without receiving records, before it deregisters; 0 means 500 ms.
	LeaveQuiet time.Duration
	// Security configures mutual TLS between nodes; the zero value means
	// none (a node bound to an address other than loopback then logs a
	// warning). See transport.Security.
	Security transport.Security
}

// MaxExactlyOnceCommitInterval bounds the default CommitInterval under
// exactly-once.
const MaxExactlyOnceCommitInterval = time.Second

// DefaultConfig returns the configuration used for zero fields.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	if host == "" {
		host = "local"
	}
	return Config{
		NodeID:          host,
		DataDir:         "sluice-data",
		Logger:          slog.Default(),
		CommitInterval:  200 * time.Millisecond,
		BatchSize:       256,
		BatchBytes:      1 << 20,
		MaxRecordBytes:  4 << 20,
		Credits:         8,
		RemoteCredits:   8,
		RemoteBatchSize: 1024,
		BufferBatches:   8,

		MinFreeDisk:       64 << 20,
		DiskCheckInterval: 250 * time.Millisecond,
	}
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.NodeID == "" {
		c.NodeID = d.NodeID
	}
	if c.DataDir == "" {
		c.DataDir = d.DataDir
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	if c.BatchSize == 0 {
		c.BatchSize = d.BatchSize
	}
	if c.RemoteBatchSize == 0 {
		c.RemoteBatchSize = d.RemoteBatchSize
	}
	if c.BatchBytes == 0 {
		c.BatchBytes = d.BatchBytes
	}
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = d.MaxRecordBytes
	}
	if c.Credits == 0 {
		c.Credits = d.Credits
	}
	if c.RemoteCredits == 0 {
		c.RemoteCredits = d.RemoteCredits
	}
	if c.BufferBatches == 0 {
		c.BufferBatches = d.BufferBatches
	}
	if c.MinFreeDisk == 0 {
		c.MinFreeDisk = d.MinFreeDisk
	}
	if c.DiskCheckInterval == 0 {
		c.DiskCheckInterval = d.DiskCheckInterval
	}
	if c.Checkpoints != nil {
		c.AtLeastOnce = false // checkpoints replace durability tracking
		cc := *c.Checkpoints
		if cc.Interval == 0 {
			cc.Interval = time.Second
		}
		if cc.Timeout == 0 {
			cc.Timeout = time.Minute
		}
		if cc.Keep == 0 {
			cc.Keep = 3
		}
		c.Checkpoints = &cc
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = d.CommitInterval
		if c.Checkpoints != nil {
			c.CommitInterval = min(c.Checkpoints.Interval, MaxExactlyOnceCommitInterval)
		}
	}
	if c.Cluster != nil {
		cc := *c.Cluster
		if cc.BindAddr == "" {
			cc.BindAddr = "127.0.0.1:0"
		}
		if cc.Settle == 0 {
			cc.Settle = 200 * time.Millisecond
		}
		if cc.LeaveQuiet == 0 {
			cc.LeaveQuiet = 500 * time.Millisecond
		}
		c.Cluster = &cc
	}
	return c
}

// guarantee returns the node's delivery guarantee.
func (n *Node) guarantee() core.Guarantee {
	if n.cfg.Checkpoints != nil {
		return core.ExactlyOnce
	}
	if n.cfg.AtLeastOnce {
		return core.AtLeastOnce
	}
	return core.NoGuarantee
}

// settle returns the membership settle delay (none when embedded).
func (c Config) settle() time.Duration {
	if c.Cluster == nil {
		return 0
	}
	return c.Cluster.Settle
}

// Validate reports the invalid fields of c (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.CommitInterval < 0 {
		errs = append(errs, fmt.Errorf("Config.CommitInterval must be ≥ 0 (0: %v), got %v", DefaultConfig().CommitInterval, c.CommitInterval))
	}
	d := DefaultConfig()
	for _, f := range []struct {
		name       string
		got, deflt int
	}{
		{"BatchSize", c.BatchSize, d.BatchSize},
		{"RemoteBatchSize", c.RemoteBatchSize, d.RemoteBatchSize},
		{"BatchBytes", c.BatchBytes, d.BatchBytes},
		{"MaxRecordBytes", c.MaxRecordBytes, d.MaxRecordBytes},
		{"Credits", c.Credits, d.Credits},
		{"RemoteCredits", c.RemoteCredits, d.RemoteCredits},
		{"BufferBatches", c.BufferBatches, d.BufferBatches},
	} {
		if f.got < 1 { // zero became the default above: only a negative value is left
			errs = append(errs, fmt.Errorf("Config.%s must be ≥ 0 (0: %d), got %d", f.name, f.deflt, f.got))
		}
	}
	if c.DiskCheckInterval < 0 {
		errs = append(errs, fmt.Errorf("disk check interval must be > 0, got %v", c.DiskCheckInterval))
	}
	if cc := c.Checkpoints; cc != nil {
		if cc.Store == nil {
			errs = append(errs, errors.New("Config.Checkpoints.Store must be set"))
		}
		for _, f := range []struct {
			name string
			bad  bool
			got  any
		}{{"Interval", cc.Interval < 0, cc.Interval}, {"Timeout", cc.Timeout < 0, cc.Timeout}, {"Keep", cc.Keep < 0, cc.Keep}} {
			if f.bad {
				errs = append(errs, fmt.Errorf("Config.Checkpoints.%s must be ≥ 0 (0: the default), got %v", f.name, f.got))
			}
		}
	}
	if c.Cluster != nil && c.Cluster.Discovery == nil {
		errs = append(errs, errors.New("Config.Cluster.Discovery must be set (e.g. a cluster/consul Discovery)"))
	}
	if c.Cluster != nil {
		if err := c.Cluster.Security.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("actors: invalid config: %w", err)
	}
	return nil
}

// runtimeKinds returns the built-in kinds of the configured runtimes.
func (c Config) runtimeKinds() []string {
	if c.Runtimes[core.RuntimeWasm] != nil {
		return []string{core.WasmKind}
	}
	return nil
}
