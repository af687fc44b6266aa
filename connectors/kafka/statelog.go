package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/sdk"
)

// stateLogBuffered bounds the records a StateLog's producer holds; commits
// of many keys at once must not block on it.
const stateLogBuffered = 1 << 20

// StateLog keeps operator state in Kafka so that it survives the crash of
// the node that held it (node.Config.StateLog): one compacted changelog
// topic per operator, "<Prefix>.<operator>.changelog", with one partition
// per key group. Each write is a record keyed by its full state key (nil
// value: deleted) in its key group's partition.
//
// A StateLog is shared by every instance of a node and safe for concurrent
// use. Close it after the runtime has stopped.
type StateLog struct {
	cfg    StateLogConfig
	health *health
	opts   []kgo.Opt // of every client: brokers, hooks, security, ClientOptions
	cl     *kgo.Client
	adm    *kadm.Client

	// Lock order: createMu, then mu.
	createMu sync.Mutex // serialises topic creation
	mu       sync.Mutex
	topics   map[string]int // changelog topics known to exist → their partitions
}

var _ sdk.StateLog = (*StateLog)(nil)

// NewStateLog checks cfg and returns a StateLog; it does not contact the
// brokers.
func NewStateLog(cfg StateLogConfig) (*StateLog, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	l := &StateLog{cfg: cfg, health: new(health), topics: make(map[string]int)}
	base, err := clientOptions(cfg.Brokers, l.health, cfg.Security)
	if err != nil {
		return nil, fmt.Errorf("kafka state log: %w", err)
	}
	l.opts = slices.Concat(base, cfg.ClientOptions)
	opts := slices.Concat(base, []kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(stateLogBuffered)}, cfg.ClientOptions)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka state log: %w", err)
	}
	l.cl, l.adm = cl, kadm.NewClient(cl)
	return l, nil
}

// Topic returns the changelog topic of operator op.
func (l *StateLog) Topic(op string) string { return l.cfg.Prefix + "." + op + ".changelog" }

// Close closes the producer. Appends still waiting fail.
func (l *StateLog) Close() { l.cl.Close() }

// Append implements sdk.StateLog: it writes kvs to op's changelog, each
// to its key group's partition, and waits (at most AppendTimeout) until the
// brokers have acknowledged them all. On failure some may be written: the
// runtime appends them again (in order, so the last write of a key wins).
func (l *StateLog) Append(ctx context.Context, op string, keyGroups int, kvs []sdk.KV) error {
	if len(kvs) == 0 {
		return nil
	}
	topic, err := l.ensure(ctx, op, keyGroups)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		if g := kv.KeyGroup; g < 0 || g >= keyGroups {
			return fmt.Errorf("kafka state log: key %q of %q is in no key group of %d", kv.Key, op, keyGroups)
		}
	}
	actx, cancel := context.WithTimeout(ctx, l.cfg.AppendTimeout)
	defer cancel()
	var (
		left     atomic.Int64
		done     = make(chan struct{})
		errMu    sync.Mutex
		firstErr error
	)
	left.Store(int64(len(kvs)))
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			errMu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			errMu.Unlock()
		}
		if left.Add(-1) == 0 {
			close(done)
		}
	}
	for _, kv := range kvs {
		l.cl.Produce(actx, &kgo.Record{Topic: topic, Partition: int32(kv.KeyGroup), Key: kv.Key, Value: kv.Value}, promise)
	}
	select {
	case <-done:
	case <-actx.Done():
		return l.transient(fmt.Errorf("append %d writes of %q: %d not acknowledged within %v", len(kvs), op, left.Load(), l.cfg.AppendTimeout))
	}
	errMu.Lock()
	defer errMu.Unlock()
	if firstErr != nil {
		return l.transient(fmt.Errorf("append %d writes of %q: %w", len(kvs), op, firstErr))
	}
	return nil
}

// transient wraps err as a transient failure, naming a broker outage when
// there is one. A refusal of the client's credentials or certificate is not transient.
func (l *StateLog) transient(err error) error {
	return l.health.failure("kafka state log", err)
}

// ensure creates op's changelog topic if needed and checks its partitions.
func (l *StateLog) ensure(ctx context.Context, op string, keyGroups int) (string, error) {
	topic := l.Topic(op)
	known := func() (bool, error) {
		l.mu.Lock()
		n, ok := l.topics[topic]
		l.mu.Unlock()
		if ok && n != keyGroups {
			return true, fmt.Errorf("kafka state log: %w: %q has %d, operator %q has %d key groups (delete the topic, or use another Prefix)", ErrPartitions, topic, n, op, keyGroups)
		}
		return ok, nil
	}
	if ok, err := known(); ok {
		return topic, err
	}
	l.createMu.Lock()
	defer l.createMu.Unlock()
	if ok, err := known(); ok {
		return topic, err
	}
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	_, err := l.adm.CreateTopic(cctx, int32(keyGroups), l.cfg.ReplicationFactor, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, topic)
	switch {
	case err == nil:
	case errors.Is(err, kerr.TopicAlreadyExists):
		n, err := l.partitions(cctx, topic)
		if err != nil {
			return "", err
		}
		if n == 0 {
			return "", l.transient(fmt.Errorf("%q exists but its metadata is not available yet", topic))
		}
		if n != keyGroups {
			return "", fmt.Errorf("kafka state log: %w: %q has %d, operator %q has %d key groups (delete the topic, or use another Prefix)", ErrPartitions, topic, n, op, keyGroups)
		}
	default:
		return "", l.transient(fmt.Errorf("create %q: %w", topic, err))
	}
	l.mu.Lock()
	l.topics[topic] = keyGroups
	l.mu.Unlock()
	return topic, nil
}

// partitions returns the number of partitions of topic, or 0 if it does
// not exist.
func (l *StateLog) partitions(ctx context.Context, topic string) (int, error) {
	td, err := l.adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, l.transient(fmt.Errorf("describe %q: %w", topic, err))
	}
	d, ok := td[topic]
	if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
		return 0, nil
	}
	if d.Err != nil {
		return 0, l.transient(fmt.Errorf("describe %q: %w", topic, d.Err))
	}
	return len(d.Partitions), nil
}

// Restore implements sdk.StateLog: it reads partitions [first, end) of
// op's changelog from their start up to their end as of the call, calling
// fn with every write in order. While the brokers are unavailable it keeps
// trying, for at most RestoreTimeout; each new try calls fn from the start
// again. An error from fn ends it.
func (l *StateLog) Restore(ctx context.Context, op string, keyGroups, first, end int, fn func(sdk.KV) error) error {
	rctx, cancel := context.WithTimeout(ctx, l.cfg.RestoreTimeout)
	defer cancel()
	delays := retryBackoff()
	for {
		err := l.restore(rctx, op, keyGroups, first, end, fn)
		if err == nil || !errors.Is(err, sdk.ErrTransient) {
			return err
		}
		if !backoff.Sleep(rctx, delays.Next()) {
			return err
		}
	}
}

// fnError marks an error returned by Restore's fn.
type fnError struct{ err error }

func (e *fnError) Error() string { return e.err.Error() }
func (e *fnError) Unwrap() error { return e.err }

func (l *StateLog) restore(ctx context.Context, op string, keyGroups, first, end int, fn func(sdk.KV) error) error {
	topic := l.Topic(op)
	n, err := l.partitions(ctx, topic)
	if err != nil || n == 0 {
		return err // nothing was ever logged
	}
	if n != keyGroups {
		return fmt.Errorf("kafka state log: %w: %q has %d, operator %q has %d key groups", ErrPartitions, topic, n, op, keyGroups)
	}
	starts, err := l.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return l.transient(fmt.Errorf("list offsets of %q: %w", topic, err))
	}
	ends, err := l.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return l.transient(fmt.Errorf("list offsets of %q: %w", topic, err))
	}
	want := make(map[int32]int64) // partition → high watermark
	parts := make(map[int32]kgo.Offset)
	for p := int32(first); p < int32(end); p++ {
		s, ok1 := starts.Lookup(topic, p)
		e, ok2 := ends.Lookup(topic, p)
		if !ok1 || !ok2 || s.Err != nil || e.Err != nil {
			return l.transient(fmt.Errorf("list offsets of %q partition %d: not available", topic, p))
		}
		if e.Offset > s.Offset {
			want[p] = e.Offset
			parts[p] = kgo.NewOffset().At(s.Offset)
		}
	}
	if len(want) == 0 {
		return nil
	}
	opts := slices.Clone(l.opts)
	opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	cons, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka state log: %w", err)
	}
	defer cons.Close()
	for len(want) > 0 {
		fetches := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return l.transient(fmt.Errorf("restore %q: %d partitions not read to their end: %w", topic, len(want), ctx.Err()))
		}
		var ferr error
		fetches.EachError(func(_ string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("restore %q partition %d: %w", topic, p, err)
			}
		})
		if ferr != nil {
			return l.transient(ferr)
		}
		var done []int32
		fetches.EachRecord(func(r *kgo.Record) {
			hw, ok := want[r.Partition]
			if !ok || ferr != nil || r.Offset >= hw {
				return
			}
			if err := fn(sdk.KV{KeyGroup: int(r.Partition), Key: r.Key, Value: r.Value}); err != nil {
				ferr = &fnError{err}
				return
			}
			if r.Offset >= hw-1 {
				delete(want, r.Partition)
				done = append(done, r.Partition)
			}
		})
		if ferr != nil {
			return ferr
		}
		if len(done) > 0 {
			cons.PauseFetchPartitions(map[string][]int32{topic: done})
		}
	}
	return nil
}
