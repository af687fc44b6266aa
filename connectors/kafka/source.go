package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/sdk"
)

// connectTimeout bounds the metadata and offset requests a source makes
// when it starts reading (inside one Poll).
const connectTimeout = 5 * time.Second

// tp is a topic partition.
type tp struct {
	topic     string
	partition int32
}

func (k tp) String() string { return k.topic + "/" + strconv.Itoa(int(k.partition)) }

// offsets maps partitions to the offset of the next record to read. It is
// the source's Position.
type offsets map[tp]int64

// posPrefix starts the state keys under which a source keeps its positions:
// "kafka/pos/<topic>/<partition>" → offset (8 bytes, big endian).
const posPrefix = "kafka/pos/"

func posKey(k tp) []byte { return []byte(posPrefix + k.topic + "/" + strconv.Itoa(int(k.partition))) }

// parsePosKey is the inverse of posKey.
func parsePosKey(key []byte) (tp, bool) {
	s, ok := strings.CutPrefix(string(key), posPrefix)
	if !ok {
		return tp{}, false
	}
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return tp{}, false
	}
	p, err := strconv.ParseInt(s[i+1:], 10, 32)
	if err != nil {
		return tp{}, false
	}
	return tp{s[:i], int32(p)}, true
}

// Source is the Kafka source operator (see SourceConfig and the package
// documentation). The runtime calls its methods on the instance's
// goroutine; only its offset committer runs on a goroutine of its own.
type Source struct {
	cfg SourceConfig

	op          string // the operator's name as deployed
	group       string
	index, par  int
	deadLetters string
	log         *slog.Logger

	health *health
	opts   []kgo.Opt   // of every client: brokers, hooks, security, ClientOptions
	ctl    *kgo.Client // metadata, offsets and commits
	adm    *kadm.Client
	cons   *kgo.Client // the assigned partitions; nil until connected or with none
	commit *committer

	connected bool
	assigned  []tp
	next      offsets // position: the next offset to read per partition
	durable   offsets // the last durable position (committed, or where reading began)
	early     offsets // durable positions reported before connecting
	stored    offsets // positions in state (CommitProduced, exactly-once)
	dirty     map[tp]bool
	durableAt time.Time // when the durable position was taken, or reading (re)started
	paused    bool      // fetching stopped by MaxUndurable
	pinged    time.Time // the brokers' last ping while paused

	flushes, positions int
	warned             bool

	// Exactly-once (source_eo.go).
	eo            bool
	barriers      []barrierPos // positions at the barriers not yet committed
	commitAtStart bool         // Commit ran before connecting: commit where reading starts
	committed     bool         // Commit ran in this incarnation
}

var (
	_ sdk.Replayable = (*Source)(nil)
	_ sdk.Resumable  = (*Source)(nil)
	_ sdk.Committer  = (*Source)(nil)
	_ sdk.Flusher    = (*Source)(nil)
	_ sdk.Closer     = (*Source)(nil)
)

// NewSource checks cfg and returns the factory of a Kafka source operator.
func NewSource(cfg SourceConfig) (sdk.Factory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return func() sdk.Operator { return &Source{cfg: cfg} }, nil
}

// Metadata implements sdk.Operator.
func (s *Source) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.cfg.Name, Outputs: []string{s.cfg.Stream}, Parallelism: s.cfg.Parallelism, KeyGroups: s.cfg.KeyGroups}
}

// Init prepares the instance. It does not contact the brokers (a source
// must start even while they are down): the first Poll does. Under
// exactly-once and CommitProduced it reads the positions State holds.
func (s *Source) Init(ctx sdk.Context) error {
	info := ctx.Instance()
	s.op, s.index, s.par = info.Operator, info.Index, info.Parallelism
	s.group = s.cfg.Group
	if s.group == "" {
		s.group = s.op
	}
	s.deadLetters = sdk.DeadLetterStream(s.op)
	s.log = ctx.Logger()
	s.dirty = make(map[tp]bool)
	s.eo = info.Guarantee == sdk.ExactlyOnce
	if s.cfg.Commit == CommitProduced || s.eo {
		s.stored = make(offsets)
		err := sdk.ScanAllGroups(ctx.State(), []byte(posPrefix), func(key, value []byte) error {
			if k, ok := parsePosKey(key); ok && len(value) == 8 {
				s.stored[k] = int64(binary.BigEndian.Uint64(value))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("kafka source %q: read positions: %w", s.op, err)
		}
	}
	s.health = new(health)
	opts, err := clientOptions(s.cfg.Brokers, s.health, s.cfg.Security)
	if err != nil {
		return fmt.Errorf("kafka source %q: %w", s.op, err)
	}
	s.opts = slices.Concat(opts, s.cfg.ClientOptions)
	ctl, err := kgo.NewClient(s.opts...)
	if err != nil {
		return fmt.Errorf("kafka source %q: %w", s.op, err)
	}
	s.ctl, s.adm = ctl, kadm.NewClient(ctl)
	s.commit = startCommitter(s.adm, s.group, s.log)
	return nil
}

// Poll produces the records fetched since the last Poll (at most
// MaxPollRecords, waiting at most PollTimeout for some), decoding each;
// records that do not decode go to the dead-letter stream. While the
// brokers cannot be reached it returns an error wrapping sdk.ErrTransient.
func (s *Source) Poll(ctx sdk.Context) error {
	if !s.connected {
		if err := s.connect(ctx); err != nil {
			return err
		}
	}
	if s.cons == nil {
		return nil // no partitions for this instance
	}
	if s.undurableTooLong() {
		return s.checkBrokers(ctx)
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.PollTimeout)
	fetches := s.cons.PollRecords(pctx, s.cfg.MaxPollRecords)
	cancel()
	if fetches.IsClientClosed() {
		return nil
	}
	fetches.EachError(func(topic string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			s.log.Warn("kafka fetch error", "topic", topic, "partition", p, "error", err)
		}
	})
	var perr error
	n := 0
	fetches.EachRecord(func(r *kgo.Record) {
		if perr != nil {
			return
		}
		rec, err := s.cfg.Decode(r)
		if err != nil {
			perr = ctx.Produce(s.deadLetters, s.deadLetter(r, err))
		} else {
			perr = ctx.Produce(s.cfg.Stream, rec)
		}
		k := tp{r.Topic, r.Partition}
		s.next[k] = r.Offset + 1
		s.dirty[k] = true
		n++
	})
	if perr != nil {
		return fmt.Errorf("kafka source %q: %w", s.op, perr)
	}
	s.storePositions(ctx)
	if n == 0 {
		return s.brokerTrouble()
	}
	return nil
}

// brokerTrouble reports, when the brokers cannot be used, why: a refusal
// of the client's credentials or certificate (not transient), or an
// outage (transient); nil when neither is known.
func (s *Source) brokerTrouble() error {
	if err := s.health.refused(); err != nil {
		return fmt.Errorf("kafka source %q: %w", s.op, err)
	}
	if err := s.health.unavailable(); err != nil {
		return fmt.Errorf("kafka source %q: %w: %w", s.op, sdk.ErrTransient, err)
	}
	return nil
}

// undurableTooLong reports whether reading must wait (MaxUndurable): the
// runtime tracks durability, the instance has read past its durable
// position, and that position was taken more than MaxUndurable ago (what
// was read since has been waiting that long). It logs when reading stops
// and when it resumes.
func (s *Source) undurableTooLong() bool {
	stop := !s.eo && s.cfg.Commit == CommitDurable && s.cfg.MaxUndurable > 0 && s.positions > 0 &&
		time.Since(s.durableAt) > s.cfg.MaxUndurable && s.readAhead()
	if stop != s.paused {
		s.paused = stop
		if stop {
			s.log.Info("kafka source: what it read has not become durable for too long; reading stops until it does, to bound what a crash replays",
				"max_undurable", s.cfg.MaxUndurable, "durable", describe(s.durable), "next", describe(s.next))
		} else {
			s.log.Info("kafka source: reading again", "durable", describe(s.durable))
		}
	}
	return stop
}

// checkBrokers reports a broker outage while reading is stopped (nothing
// else then talks to the brokers): at most once a second it pings them,
// for at most PollTimeout.
func (s *Source) checkBrokers(ctx context.Context) error {
	if time.Since(s.pinged) >= time.Second {
		s.pinged = time.Now()
		pctx, cancel := context.WithTimeout(ctx, s.cfg.PollTimeout)
		_ = s.ctl.Ping(pctx) // a failed dial shows in s.health
		cancel()
	}
	return s.brokerTrouble()
}

// readAhead reports whether some partition has been read past its durable
// position.
func (s *Source) readAhead() bool {
	for k, o := range s.next {
		if o > s.durable[k] {
			return true
		}
	}
	return false
}

// deadLetter wraps an undecodable Kafka record for the dead-letter stream.
func (s *Source) deadLetter(r *kgo.Record, err error) sdk.Record {
	hs := make([]sdk.Header, 0, len(r.Headers)+5)
	for _, h := range r.Headers {
		hs = append(hs, sdk.Header{Key: h.Key, Value: string(h.Value)})
	}
	hs = append(hs,
		sdk.Header{Key: HeaderTopic, Value: r.Topic},
		sdk.Header{Key: HeaderPartition, Value: strconv.Itoa(int(r.Partition))},
		sdk.Header{Key: HeaderOffset, Value: strconv.FormatInt(r.Offset, 10)},
		sdk.Header{Key: sdk.HeaderError, Value: "decode: " + err.Error()},
		sdk.Header{Key: sdk.HeaderOperator, Value: s.op},
	)
	return sdk.Record{Key: r.Key, Value: r.Value, EventTime: r.Timestamp, Headers: hs}
}

// storePositions writes changed positions to the instance's state, so that
// they commit in the same batch as the rest of its state.
func (s *Source) storePositions(ctx sdk.Context) {
	if len(s.dirty) == 0 {
		return
	}
	st := ctx.State()
	for k := range s.dirty {
		st.Set(posKey(k), binary.BigEndian.AppendUint64(nil, uint64(s.next[k])))
	}
	clear(s.dirty)
}

// connect finds the instance's partitions and where to read each from, and
// starts fetching.
func (s *Source) connect(ctx sdk.Context) error {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	transient := func(err error) error {
		return s.health.failure(fmt.Sprintf("kafka source %q", s.op), err)
	}
	topics, err := s.adm.ListTopics(cctx, s.cfg.Topics...)
	if err != nil {
		return transient(err)
	}
	var assigned []tp
	for _, t := range s.cfg.Topics {
		d, ok := topics[t]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			return transient(fmt.Errorf("%w: %q", ErrNoTopic, t))
		}
		if d.Err != nil {
			return transient(fmt.Errorf("topic %q: %w", t, d.Err))
		}
		for _, p := range d.Partitions.Numbers() {
			if int(p)%s.par == s.index {
				assigned = append(assigned, tp{t, p})
			}
		}
	}
	start := make(offsets, len(assigned))
	if s.cfg.Commit == CommitProduced || s.eo {
		for _, k := range assigned {
			if o, ok := s.stored[k]; ok {
				start[k] = o
			}
		}
	}
	if s.eo && len(s.stored) > 0 && len(start) < len(assigned) {
		var missing []string
		for _, k := range assigned {
			if _, ok := start[k]; !ok {
				missing = append(missing, k.String())
			}
		}
		s.log.Warn("kafka source: exactly-once: partitions whose position is not in this instance's state (it was rescaled) resume from the group's committed offsets, which can be behind the restored checkpoint: their records since may be produced twice",
			"partitions", missing)
	}
	if len(start) < len(assigned) {
		committed, err := s.adm.FetchOffsetsForTopics(cctx, s.group, s.cfg.Topics...)
		if errors.Is(err, kerr.GroupIDNotFound) {
			committed, err = nil, nil // nothing committed yet (kfake says so this way)
		}
		if err != nil {
			return transient(fmt.Errorf("fetch committed offsets of group %q: %w", s.group, err))
		}
		for _, k := range assigned {
			if _, ok := start[k]; ok {
				continue
			}
			if o, ok := committed.Lookup(k.topic, k.partition); ok && o.Err == nil && o.At >= 0 {
				start[k] = o.At
			}
		}
	}
	if len(start) < len(assigned) {
		list := s.adm.ListStartOffsets
		if s.cfg.Start == StartLatest {
			list = s.adm.ListEndOffsets
		}
		listed, err := list(cctx, s.cfg.Topics...)
		if err != nil {
			return transient(fmt.Errorf("list offsets: %w", err))
		}
		for _, k := range assigned {
			if _, ok := start[k]; ok {
				continue
			}
			o, ok := listed.Lookup(k.topic, k.partition)
			if !ok || o.Err != nil {
				return transient(fmt.Errorf("list offsets of %s: %v", k, o.Err))
			}
			start[k] = o.Offset
		}
	}
	// Durable positions reported before connecting (by a previous
	// incarnation's pending snapshots) are at least as good.
	for k, o := range s.early {
		if _, ok := start[k]; ok && o > start[k] {
			start[k] = o
		}
	}
	s.early = nil
	s.assigned = assigned
	s.next, s.durable = maps.Clone(start), maps.Clone(start)
	s.durableAt = time.Now()
	for _, k := range assigned {
		s.dirty[k] = true
	}
	s.storePositions(ctx)
	s.connected = true
	if s.commitAtStart {
		// Commit ran for the restored checkpoint before the source knew
		// its partitions: their positions are where reading starts.
		s.commitAtStart = false
		s.commit.set(maps.Clone(start))
	}
	if len(assigned) == 0 {
		s.log.Info("kafka source: no partitions for this instance", "topics", s.cfg.Topics, "instances", s.par)
		return nil
	}
	if err := s.startConsumer(); err != nil {
		s.connected = false
		return err
	}
	s.log.Info("kafka source reading", "group", s.group, "partitions", describe(start))
	return nil
}

// startConsumer starts fetching every assigned partition from s.next.
func (s *Source) startConsumer() error {
	parts := make(map[string]map[int32]kgo.Offset)
	for _, k := range s.assigned {
		if parts[k.topic] == nil {
			parts[k.topic] = make(map[int32]kgo.Offset)
		}
		parts[k.topic][k.partition] = kgo.NewOffset().At(s.next[k])
	}
	reset := kgo.NewOffset().AtStart()
	if s.cfg.Start == StartLatest {
		reset = kgo.NewOffset().AtEnd()
	}
	opts := slices.Concat(s.opts, []kgo.Opt{kgo.ConsumePartitions(parts), kgo.ConsumeResetOffset(reset)})
	cons, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka source %q: %w", s.op, err)
	}
	s.cons = cons
	return nil
}

// describe renders offsets as "topic/partition@offset …", sorted.
func describe(o offsets) string {
	keys := slices.SortedFunc(maps.Keys(o), func(a, b tp) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s@%d", k, o[k])
	}
	return b.String()
}

// position is a source's Position: the next offset of every partition, and
// when it was taken.
type position struct {
	next offsets
	at   time.Time
}

// Position implements sdk.Replayable: the next offset of every partition.
func (s *Source) Position() any {
	s.positions++
	if !s.connected {
		return position{at: time.Now()}
	}
	return position{next: maps.Clone(s.next), at: time.Now()}
}

// Durable implements sdk.Replayable: it commits pos to the consumer group
// (asynchronously, latest first) under CommitDurable.
func (s *Source) Durable(_ sdk.Context, pos any) {
	pp, _ := pos.(position)
	p := pp.next
	if len(p) == 0 {
		return
	}
	if !s.connected {
		if s.early == nil {
			s.early = make(offsets)
		}
		for k, o := range p {
			s.early[k] = max(s.early[k], o)
		}
		return
	}
	changed := false
	for k, o := range p {
		if cur, ok := s.durable[k]; ok && o > cur {
			s.durable[k] = o
			changed = true
		}
	}
	if changed && pp.at.After(s.durableAt) {
		s.durableAt = pp.at
	}
	if changed && s.cfg.Commit == CommitDurable && !s.eo {
		s.commit.set(maps.Clone(s.durable))
	}
}

// Rewind implements sdk.Replayable: it reads every partition again from
// its last durable position.
func (s *Source) Rewind(ctx sdk.Context) error {
	if !s.connected || len(s.assigned) == 0 {
		return nil // connect starts from the group's committed offsets
	}
	if s.cons != nil {
		s.cons.Close()
		s.cons = nil
	}
	s.next = maps.Clone(s.durable)
	s.durableAt = time.Now()
	for _, k := range s.assigned {
		s.dirty[k] = true
	}
	s.storePositions(ctx)
	s.log.Info("kafka source rewound", "partitions", describe(s.next))
	return s.startConsumer()
}

// Flush implements sdk.Flusher. Under CommitProduced it commits what has
// been produced; under CommitDurable it only checks that the runtime
// tracks durability (otherwise offsets would never be committed). Under
// exactly-once it does nothing: offsets are committed after checkpoints
// complete (Commit).
func (s *Source) Flush(sdk.Context) error {
	s.flushes++
	switch {
	case s.eo:
	case s.cfg.Commit == CommitProduced && s.connected && len(s.next) > 0:
		s.commit.set(maps.Clone(s.next))
	case s.cfg.Commit == CommitDurable && s.flushes >= 20 && s.positions == 0 && !s.warned:
		s.warned = true
		s.log.Warn("kafka source: the runtime does not track durability (node.Config.AtLeastOnce is off), so offsets are never committed; turn AtLeastOnce on, or use Commit: CommitProduced")
	}
	return nil
}

// Close implements sdk.Closer: it makes a last attempt to commit the
// latest durable offsets, then closes the clients.
func (s *Source) Close(sdk.Context) error {
	if s.commit != nil {
		s.commit.close()
	}
	if s.cons != nil {
		s.cons.Close()
		s.cons = nil
	}
	if s.ctl != nil {
		s.ctl.Close()
	}
	return nil
}

// ProcessRecord implements sdk.Operator; a source has no inputs.
func (s *Source) ProcessRecord(sdk.Context, sdk.Record) error { return nil }

// ProcessTimer implements sdk.Operator.
func (s *Source) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// DecodeRaw is the default SourceConfig.Decode: the Kafka record's key,
// value and headers, with its timestamp as the event time.
func DecodeRaw(r *kgo.Record) (sdk.Record, error) {
	rec := sdk.Record{Key: r.Key, Value: r.Value, EventTime: r.Timestamp}
	if len(r.Headers) > 0 {
		rec.Headers = make([]sdk.Header, len(r.Headers))
		for i, h := range r.Headers {
			rec.Headers[i] = sdk.Header{Key: h.Key, Value: string(h.Value)}
		}
	}
	return rec, nil
}
