package kafka

import (
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/sdk"
)

// StartOffset says where a source partition with no committed offset in
// the consumer group starts.
type StartOffset int

// Start offsets.
const (
	// StartEarliest reads a partition from its first retained record (the
	// zero value).
	StartEarliest StartOffset = iota
	// StartLatest reads only records written after the source first
	// looked at the partition.
	StartLatest
)

// String returns "earliest" or "latest".
func (s StartOffset) String() string {
	switch s {
	case StartEarliest:
		return "earliest"
	case StartLatest:
		return "latest"
	}
	return fmt.Sprintf("StartOffset(%d)", int(s))
}

// ParseStartOffset parses "earliest" or "latest" (as in flags and
// environment variables).
func ParseStartOffset(s string) (StartOffset, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "earliest", "oldest", "start":
		return StartEarliest, nil
	case "latest", "newest", "end":
		return StartLatest, nil
	}
	return 0, fmt.Errorf("kafka: unknown start offset %q: want earliest or latest", s)
}

// CommitPolicy says when a source commits its offsets to the consumer group
// and where a source instance resumes.
type CommitPolicy int

// Commit policies.
const (
	// CommitDurable (the zero value) commits the offsets of records whose
	// effects are durable downstream, when the runtime reports them so
	// (node.Config.AtLeastOnce must be on), and resumes every partition
	// from the group's committed offset. This is at-least-once delivery:
	// after a crash or a move, records are replayed, never skipped.
	CommitDurable CommitPolicy = iota
	// CommitProduced is for runtimes without AtLeastOnce: a source instance
	// resumes from the positions stored in its own state (committed in the
	// same Pebble batch as the rest of its state), and commits what it has
	// produced to the group at each state commit, for monitoring. Records in
	// flight when a node crashes may be lost.
	CommitProduced
)

// String returns "durable" or "produced".
func (p CommitPolicy) String() string {
	switch p {
	case CommitDurable:
		return "durable"
	case CommitProduced:
		return "produced"
	}
	return fmt.Sprintf("CommitPolicy(%d)", int(p))
}

// Defaults for zero fields.
const (
	DefaultPollTimeout    = 100 * time.Millisecond
	DefaultMaxPollRecords = 4096
	DefaultFlushTimeout   = 5 * time.Second
	DefaultCloseTimeout   = 10 * time.Second
	DefaultStatePrefix    = "sluice"
	DefaultRestoreTimeout = 2 * time.Minute
	DefaultAppendTimeout  = 10 * time.Second
	DefaultMaxUndurable   = time.Second

	// DefaultTransactionPool is SinkConfig.TransactionPool's default.
	DefaultTransactionPool = 8
	// DefaultTransactionTimeout is SinkConfig.TransactionTimeout's
	// default: well above a checkpoint interval plus a recovery, and
	// below the brokers' default cap (transaction.max.timeout.ms, 15m).
	DefaultTransactionTimeout = 10 * time.Minute
	// DefaultCommitTimeout is SinkConfig.CommitTimeout's default.
	DefaultCommitTimeout = 30 * time.Second
)

// Bounds of the transaction settings.
const (
	maxTransactionPool    = 1000
	maxTransactionTimeout = time.Hour
)

// SourceConfig configures a Kafka source operator. Zero fields take the
// defaults above; Validate names the first field that is wrong.
type SourceConfig struct {
	// Name is the operator's name (and kind); required.
	Name string
	// Brokers are the seed brokers, "host:port"; required.
	Brokers []string
	// Topics are read in full by the source's instances together: instance
	// i of P reads partitions p of each topic with p mod P = i. Required.
	Topics []string
	// Group is the consumer group whose committed offsets the source
	// resumes from and commits to; empty means the operator's name as
	// deployed. The source never joins the group (no rebalancing: Sluice
	// places the instances), it only stores offsets there, so the group
	// must not be used by group consumers at the same time.
	Group string
	// Start says where partitions with no committed offset begin.
	Start StartOffset
	// Commit says when offsets are committed and where instances resume.
	Commit CommitPolicy
	// Stream is the output stream; required.
	Stream string
	// Parallelism is the number of instances; 0 means 1. Instances beyond
	// the number of partitions stay idle.
	Parallelism int
	// KeyGroups is the operator's number of key groups (see sdk.Metadata);
	// 0 means the runtime's default. The source keeps its positions in its
	// instances' first key groups.
	KeyGroups int
	// Decode maps a Kafka record to the record produced to Stream; nil
	// means DecodeRaw. A Decode error sends the Kafka record to the
	// operator's dead-letter stream (with HeaderTopic, HeaderPartition,
	// HeaderOffset and sdk.HeaderError) and the source moves on. Decode
	// must not keep rec after it returns, but the returned record may
	// share rec's Key, Value and header values.
	Decode func(rec *kgo.Record) (sdk.Record, error)
	// PollTimeout bounds how long one Poll waits for records.
	PollTimeout time.Duration
	// MaxPollRecords bounds the records one Poll produces.
	MaxPollRecords int
	// MaxUndurable bounds, under CommitDurable, how long what an instance
	// read may wait to become durable before it stops reading: when its
	// durable position was taken more than MaxUndurable ago and it has read
	// past it, it stops fetching until the position advances (or the
	// instance rewinds). Normally a position becomes durable within a few
	// commit intervals (≈ 0.2–0.6 s). After a node crash nothing becomes
	// durable until the crash is noticed (≈ 3 s with Consul), and every
	// source then replays what it read since its durable position, so this
	// bounds what a crash replays: per source, about MaxUndurable of input
	// (plus one Poll). 0 means DefaultMaxUndurable; negative means no bound.
	MaxUndurable time.Duration
	// Security configures TLS and SASL (see docs/kafka.md "Secure
	// setup"); the zero value is plaintext without authentication.
	Security Security
	// ClientOptions are added to the franz-go client's options (fetch
	// sizes, timeouts); options that set the consumed partitions are
	// overridden.
	ClientOptions []kgo.Opt
}

// withDefaults fills zero fields.
func (c SourceConfig) withDefaults() SourceConfig {
	if c.PollTimeout <= 0 {
		c.PollTimeout = DefaultPollTimeout
	}
	if c.MaxPollRecords <= 0 {
		c.MaxPollRecords = DefaultMaxPollRecords
	}
	if c.MaxUndurable == 0 {
		c.MaxUndurable = DefaultMaxUndurable
	}
	if c.Decode == nil {
		c.Decode = DecodeRaw
	}
	return c
}

// Validate checks the configuration and returns an error naming the field
// at fault and how to fix it.
func (c SourceConfig) Validate() error {
	bad := func(field, format string, args ...any) error { return fieldError(c.Name, field, format, args...) }
	if err := validOperator(c.Name, c.Brokers, c.Parallelism); err != nil {
		return err
	}
	if len(c.Topics) == 0 {
		return bad("Topics", "must name at least one topic")
	}
	for i, t := range c.Topics {
		if err := validTopic(t); err != nil {
			return bad(fmt.Sprintf("Topics[%d]", i), "%v", err)
		}
	}
	if err := sdk.ValidName(c.Stream); err != nil {
		return bad("Stream", "%v", err)
	}
	if c.Start != StartEarliest && c.Start != StartLatest {
		return bad("Start", "unknown start offset %d: want StartEarliest or StartLatest", int(c.Start))
	}
	if c.Commit != CommitDurable && c.Commit != CommitProduced {
		return bad("Commit", "unknown commit policy %d: want CommitDurable or CommitProduced", int(c.Commit))
	}
	return c.Security.validate(c.Name)
}

// SinkConfig configures a Kafka sink operator: it writes the records of
// its inputs to a topic.
//
// Under exactly-once (sdk.ExactlyOnce) it writes the records between two
// checkpoint barriers in one Kafka transaction, flushed at the barrier
// (PreCommit) and committed when the checkpoint completes (Commit), so a
// read_committed consumer sees each record once (see the Transaction
// fields and docs/kafka.md). Otherwise it writes with an idempotent
// producer and makes the records durable (waits for the brokers'
// acknowledgements) before each state commit of its instance, so that
// what feeds it counts as delivered only once Kafka has it.
type SinkConfig struct {
	// Name is the operator's name (and kind); required.
	Name string
	// Brokers are the seed brokers, "host:port"; required.
	Brokers []string
	// Topic is the topic written to, unless Encode sets another; required.
	Topic string
	// Inputs are the streams the sink reads; required.
	Inputs []sdk.Input
	// Parallelism is the number of instances; 0 means 1.
	Parallelism int
	// KeyGroups is the operator's number of key groups; 0 means the
	// runtime's default.
	KeyGroups int
	// Encode maps a record to the Kafka record written; nil means
	// EncodeRaw. An empty Topic in the result means the Topic above; the
	// partition is chosen from the key (murmur2, as the Java client does).
	// An Encode error sends the record to the operator's dead-letter
	// stream with sdk.HeaderError.
	Encode func(rec sdk.Record) (*kgo.Record, error)
	// FlushTimeout bounds how long a flush before a commit waits for
	// acknowledgements before it reports the brokers unavailable (the
	// runtime retries at the next commit).
	FlushTimeout time.Duration
	// CloseTimeout bounds how long Close waits for unacknowledged records.
	CloseTimeout time.Duration
	// MaxBufferedRecords bounds the records waiting for acknowledgement;
	// beyond it, processing waits (backpressure). 0 means franz-go's
	// default (10,000).
	MaxBufferedRecords int
	// TransactionalIDPrefix starts the transactional ids of the sink's
	// producers under exactly-once: instance producers use
	// "<prefix>.<key group>.<k>", k < TransactionPool, where the key group
	// is the instance's first key group (so ids follow the state that
	// knows their transactions when the operator is rescaled). Empty
	// means "sluice.<operator>". Transactional ids are global to the Kafka
	// cluster: two sinks (or two Sluice clusters) with one prefix fence
	// each other's transactions, so give each pipeline its own.
	TransactionalIDPrefix string
	// TransactionPool is the number of transactional ids (producers) of an
	// instance under exactly-once; 0 means DefaultTransactionPool, and it
	// must be at least 2. A transaction holds its id from its first
	// record until its checkpoint completes and Commit runs, and the id is
	// reused once a later completed checkpoint confirms that commit.
	// Steady running needs 3 when each checkpoint completes before the
	// next barrier (one id being written, one waiting for its checkpoint,
	// one committed awaiting confirmation), one more per further barrier a
	// completion may lag. Short of free ids the sink reuses the id whose
	// commit is oldest with a fresh producer (see docs/kafka.md); when
	// every id holds a transaction waiting for its checkpoint, the next
	// record is refused with an error wrapping sdk.ErrTransient and
	// ErrPoolExhausted until a Commit frees one.
	TransactionPool int
	// TransactionTimeout is the transaction timeout the brokers enforce
	// under exactly-once: a transaction not committed this long after its
	// first record is aborted by the brokers and its records are lost
	// (ErrTransactionLost). It must exceed the checkpoint interval plus
	// the time a checkpoint takes to complete plus the time to recover
	// from a crash (detection, restore), and must not exceed the brokers'
	// transaction.max.timeout.ms (15 minutes by default). 0 means
	// DefaultTransactionTimeout.
	TransactionTimeout time.Duration
	// CommitTimeout bounds, under exactly-once, one Commit and the fencing
	// of the transactional ids in Init. 0 means DefaultCommitTimeout.
	CommitTimeout time.Duration
	// Security configures TLS and SASL (see docs/kafka.md "Secure
	// setup"); the zero value is plaintext without authentication.
	Security Security
	// ClientOptions are added to the franz-go client's options.
	ClientOptions []kgo.Opt
}

func (c SinkConfig) withDefaults() SinkConfig {
	if c.FlushTimeout <= 0 {
		c.FlushTimeout = DefaultFlushTimeout
	}
	if c.CloseTimeout <= 0 {
		c.CloseTimeout = DefaultCloseTimeout
	}
	if c.Encode == nil {
		c.Encode = EncodeRaw
	}
	if c.TransactionPool == 0 {
		c.TransactionPool = DefaultTransactionPool
	}
	if c.TransactionTimeout <= 0 {
		c.TransactionTimeout = DefaultTransactionTimeout
	}
	if c.CommitTimeout <= 0 {
		c.CommitTimeout = DefaultCommitTimeout
	}
	return c
}

// Validate checks the configuration and returns an error naming the field
// at fault and how to fix it.
func (c SinkConfig) Validate() error {
	bad := func(field, format string, args ...any) error { return fieldError(c.Name, field, format, args...) }
	if err := validOperator(c.Name, c.Brokers, c.Parallelism); err != nil {
		return err
	}
	if err := validTopic(c.Topic); err != nil {
		return bad("Topic", "%v", err)
	}
	if len(c.Inputs) == 0 {
		return bad("Inputs", "must name at least one stream")
	}
	if c.MaxBufferedRecords < 0 {
		return bad("MaxBufferedRecords", "must be ≥ 0, got %d", c.MaxBufferedRecords)
	}
	if c.TransactionalIDPrefix != "" {
		if err := validIDPrefix(c.TransactionalIDPrefix); err != nil {
			return bad("TransactionalIDPrefix", "%v", err)
		}
	}
	if c.TransactionPool != 0 && c.TransactionPool < 2 {
		return bad("TransactionPool", "must be 0 (the default, %d) or at least 2, got %d: a transaction must stay open while the next one is written", DefaultTransactionPool, c.TransactionPool)
	}
	if c.TransactionPool > maxTransactionPool {
		return bad("TransactionPool", "must be at most %d, got %d", maxTransactionPool, c.TransactionPool)
	}
	if c.TransactionTimeout < 0 || c.TransactionTimeout > 0 && c.TransactionTimeout < time.Second {
		return bad("TransactionTimeout", "must be 0 (the default, %v) or at least 1s, got %v: it must outlast a checkpoint interval plus recovery", DefaultTransactionTimeout, c.TransactionTimeout)
	}
	if c.TransactionTimeout > maxTransactionTimeout {
		return bad("TransactionTimeout", "must be at most %v, got %v (brokers cap it with transaction.max.timeout.ms, 15m by default)", maxTransactionTimeout, c.TransactionTimeout)
	}
	if c.CommitTimeout < 0 {
		return bad("CommitTimeout", "must be ≥ 0, got %v", c.CommitTimeout)
	}
	return c.Security.validate(c.Name)
}

// validIDPrefix checks a transactional id prefix: printable, no spaces,
// at most 200 bytes (the ids add the key group and the pool index).
func validIDPrefix(p string) error {
	if len(p) > 200 {
		return fmt.Errorf("must be at most 200 bytes, got %d", len(p))
	}
	for _, c := range p {
		if c <= ' ' || c == 0x7f {
			return fmt.Errorf("%q has a space or control character: use letters, digits, '-', '_' and '.'", p)
		}
	}
	return nil
}

// StateLogConfig configures a StateLog.
type StateLogConfig struct {
	// Brokers are the seed brokers, "host:port"; required.
	Brokers []string
	// Prefix starts every changelog topic's name:
	// "<Prefix>.<operator>.changelog"; empty means "sluice". Use one
	// prefix per cluster.
	Prefix string
	// ReplicationFactor of the changelog topics it creates; 0 means the
	// brokers' default.
	ReplicationFactor int16
	// AppendTimeout bounds how long one Append waits for
	// acknowledgements; the runtime retries a failed Append at the next
	// commit.
	AppendTimeout time.Duration
	// RestoreTimeout bounds how long Restore keeps trying (the brokers
	// may be unavailable for a while).
	RestoreTimeout time.Duration
	// Security configures TLS and SASL (see docs/kafka.md "Secure
	// setup"); the zero value is plaintext without authentication.
	Security Security
	// ClientOptions are added to the franz-go clients' options.
	ClientOptions []kgo.Opt
}

func (c StateLogConfig) withDefaults() StateLogConfig {
	if c.Prefix == "" {
		c.Prefix = DefaultStatePrefix
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	if c.AppendTimeout <= 0 {
		c.AppendTimeout = DefaultAppendTimeout
	}
	if c.RestoreTimeout <= 0 {
		c.RestoreTimeout = DefaultRestoreTimeout
	}
	return c
}

// Validate checks the configuration.
func (c StateLogConfig) Validate() error {
	bad := func(field, format string, args ...any) error { return fieldError("state log", field, format, args...) }
	if err := validBrokers(c.Brokers); err != nil {
		return bad("Brokers", "%v", err)
	}
	if c.Prefix != "" {
		if err := validTopic(c.Prefix); err != nil {
			return bad("Prefix", "%v", err)
		}
	}
	return c.Security.validate("state log")
}

// fieldError returns the ConfigError of field of operator op.
func fieldError(op, field, format string, args ...any) error {
	return &ConfigError{Operator: op, Field: field, Problem: fmt.Sprintf(format, args...)}
}

// validOperator checks the fields every connector operator has: its name,
// its brokers and its parallelism.
func validOperator(name string, brokers []string, parallelism int) error {
	if err := sdk.ValidName(name); err != nil {
		return fieldError(name, "Name", "%v", err)
	}
	if err := validBrokers(brokers); err != nil {
		return fieldError(name, "Brokers", "%v", err)
	}
	if parallelism < 0 {
		return fieldError(name, "Parallelism", "must be ≥ 0, got %d", parallelism)
	}
	return nil
}

// ParseBrokers splits a comma-separated broker list ("a:9092,b:9092"), as
// given in flags and environment variables.
func ParseBrokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

func validBrokers(bs []string) error {
	if len(bs) == 0 {
		return fmt.Errorf("must list at least one broker as host:port")
	}
	for _, b := range bs {
		if i := strings.LastIndexByte(b, ':'); i <= 0 || i == len(b)-1 {
			return fmt.Errorf("%q is not host:port", b)
		}
	}
	return nil
}

// validTopic checks a Kafka topic name: 1 to 249 characters from letters,
// digits, '.', '_' and '-'.
func validTopic(t string) error {
	if t == "" {
		return fmt.Errorf("must not be empty")
	}
	if len(t) > 249 {
		return fmt.Errorf("must be at most 249 characters, got %d", len(t))
	}
	if t == "." || t == ".." {
		return fmt.Errorf("%q is not a valid topic name", t)
	}
	for _, c := range t {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return fmt.Errorf("%q has %q: use letters, digits, '-', '_' and '.'", t, c)
		}
	}
	return nil
}
