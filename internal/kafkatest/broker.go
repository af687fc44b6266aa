package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BrokerConfig configures a Broker. Zero fields take defaults.
type BrokerConfig struct {
	// Brokers is the number of brokers of the fake cluster; 0 means 1.
	Brokers int
	// Dir keeps the cluster's data (so that it survives Stop); empty means
	// a temporary directory that Close removes.
	Dir string
	// Options are more kfake options (not Ports or DataDir).
	Options []kfake.Opt
}

// Broker is a kfake Kafka cluster on 127.0.0.1 that can be stopped and
// started again on the same ports with the same data, like a real broker
// being restarted: while it is stopped, connections are refused. Its
// methods are safe for concurrent use.
type Broker struct {
	cfg     BrokerConfig
	tempDir bool
	addrs   []string
	ports   []int

	mu sync.Mutex
	c  *kfake.Cluster // nil while stopped
}

// NewBroker starts a Broker on free ports.
func NewBroker(cfg BrokerConfig) (*Broker, error) {
	if cfg.Brokers <= 0 {
		cfg.Brokers = 1
	}
	b := &Broker{cfg: cfg}
	if b.cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "kafkatest-")
		if err != nil {
			return nil, err
		}
		b.cfg.Dir, b.tempDir = dir, true
	}
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(cfg.Brokers), kfake.DataDir(b.cfg.Dir)}, cfg.Options...)...)
	if err != nil {
		b.removeDir()
		return nil, fmt.Errorf("kafkatest: start kfake: %w", err)
	}
	b.c = c
	b.addrs = c.ListenAddrs()
	for _, a := range b.addrs {
		_, p, err := net.SplitHostPort(a)
		if err != nil {
			c.Close()
			b.removeDir()
			return nil, err
		}
		port, _ := strconv.Atoi(p)
		b.ports = append(b.ports, port)
	}
	return b, nil
}

// StartBroker starts a Broker for a test and closes it when the test ends.
func StartBroker(t TB, cfg BrokerConfig) *Broker {
	t.Helper()
	b, err := NewBroker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// Addrs returns the brokers' host:port addresses (they survive restarts).
func (b *Broker) Addrs() []string { return append([]string(nil), b.addrs...) }

// Cluster returns the running kfake cluster, or nil while stopped.
func (b *Broker) Cluster() *kfake.Cluster {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c
}

// Stop shuts the brokers down, saving their data: clients get their
// connections closed and new ones refused until Restart.
func (b *Broker) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.c != nil {
		b.c.Close()
		b.c = nil
	}
}

// Restart starts the brokers again on the same ports with the data they
// had. It retries for a few seconds while a port is still held.
func (b *Broker) Restart() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.c != nil {
		return nil
	}
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		var c *kfake.Cluster
		c, err = kfake.NewCluster(append([]kfake.Opt{kfake.Ports(b.ports...), kfake.DataDir(b.cfg.Dir)}, b.cfg.Options...)...)
		if err == nil {
			b.c = c
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kafkatest: restart kfake on ports %v: %w", b.ports, err)
		}
		time.Sleep(100 * time.Millisecond) // the OS releasing a port: nothing to wait on
	}
}

// Close stops the brokers and removes a temporary data directory. It is
// safe to call twice.
func (b *Broker) Close() {
	b.Stop()
	b.removeDir()
}

func (b *Broker) removeDir() {
	if b.tempDir {
		_ = os.RemoveAll(b.cfg.Dir)
		b.tempDir = false
	}
}

// Client returns a franz-go client of the brokers with more options; the
// caller closes it.
func (b *Broker) Client(opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addrs...)}, opts...)...)
}

// CreateTopic creates a topic with the given partitions (and optional
// configs such as "cleanup.policy"); an existing topic is an error.
func (b *Broker) CreateTopic(ctx context.Context, topic string, partitions int32, configs map[string]string) error {
	cl, err := b.Client()
	if err != nil {
		return err
	}
	defer cl.Close()
	cfg := make(map[string]*string, len(configs))
	for k, v := range configs {
		cfg[k] = kadm.StringPtr(v)
	}
	_, err = kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, cfg, topic)
	if err != nil {
		return fmt.Errorf("kafkatest: create topic %q: %w", topic, err)
	}
	return nil
}

// EndOffsets returns the end offset (high watermark) of every partition of
// topic.
func (b *Broker) EndOffsets(ctx context.Context, topic string) (map[int32]int64, error) {
	cl, err := b.Client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := make(map[int32]int64)
	var lerr error
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			lerr = o.Err
		}
		out[o.Partition] = o.Offset
	})
	if errors.Is(lerr, kerr.UnknownTopicOrPartition) {
		return nil, fmt.Errorf("kafkatest: topic %q: %w", topic, lerr)
	}
	return out, lerr
}

// Committed returns the offsets group has committed for topic, by
// partition.
func (b *Broker) Committed(ctx context.Context, group, topic string) (map[int32]int64, error) {
	cl, err := b.Client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).FetchOffsetsForTopics(ctx, group, topic)
	if err != nil {
		return nil, err
	}
	out := make(map[int32]int64)
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 && o.Topic == topic {
			out[o.Partition] = o.At
		}
	})
	return out, nil
}
