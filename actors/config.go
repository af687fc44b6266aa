package actors

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// Config configures a Node. Zero fields take the defaults of DefaultConfig.
type Config struct {
	// NodeID names the node in logs, status and (in a cluster) membership;
	// empty means the host name.
	NodeID string
	// DataDir is where the node's Pebble database lives; empty means
	// "./sluice-data".
	DataDir string
	// Logger receives the runtime's logs; nil means slog.Default().
	Logger *slog.Logger
	// CommitInterval is the longest time an instance's state writes stay
	// uncommitted; 0 means 200 ms.
	CommitInterval time.Duration
	// BatchSize is the number of records sent between two instances in one
	// message when there is enough traffic; 0 means 256.
	BatchSize int
	// Credits is the number of batches a producer may have sent to one
	// destination instance that it has not yet processed; it bounds the
	// memory queued per edge to Credits×BatchSize records. 0 means 8.
	Credits int
	// NoSync commits state without waiting for fsync (tests and benchmarks
	// on slow disks). A process crash then still keeps what was committed;
	// a machine crash may not.
	NoSync bool
}

// DefaultConfig returns the configuration used for zero fields.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	if host == "" {
		host = "local"
	}
	return Config{
		NodeID:         host,
		DataDir:        "sluice-data",
		Logger:         slog.Default(),
		CommitInterval: 200 * time.Millisecond,
		BatchSize:      256,
		Credits:        8,
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
	if c.CommitInterval == 0 {
		c.CommitInterval = d.CommitInterval
	}
	if c.BatchSize == 0 {
		c.BatchSize = d.BatchSize
	}
	if c.Credits == 0 {
		c.Credits = d.Credits
	}
	return c
}

// Validate reports the first invalid field of c (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.CommitInterval < 0 {
		errs = append(errs, fmt.Errorf("commit interval must be > 0, got %v", c.CommitInterval))
	}
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("batch size must be ≥ 1, got %d", c.BatchSize))
	}
	if c.Credits < 1 {
		errs = append(errs, fmt.Errorf("credits must be ≥ 1, got %d", c.Credits))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("actors: invalid config: %w", err)
	}
	return nil
}
