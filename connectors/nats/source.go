package nats

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/sdk"
)

// posPrefix starts the state keys of a source's positions:
// "nats/seq/<stream>/<filter>" → the stream sequence of the last message
// of that filter produced (8 bytes, big endian); the filter "" (the whole
// stream) is written "*all".
const posPrefix = "nats/seq/"

func posKey(stream, filter string) []byte {
	if filter == "" {
		filter = "*all"
	}
	return []byte(posPrefix + stream + "/" + filter)
}

// Header names the source adds to every record.
const (
	// HeaderSubject is the message's subject.
	HeaderSubject = "nats-subject"
	// HeaderSequence is the message's stream sequence.
	HeaderSequence = "nats-sequence"
)

// burst bounds how long a Poll goes on reading once it has a message.
const burst = 5 * time.Millisecond

// Source is the JetStream source operator (see SourceConfig and the
// package documentation). The runtime calls its methods on the instance's
// goroutine.
type Source struct {
	cfg SourceConfig

	op         string
	index, par int
	log        *slog.Logger
	filters    []string          // this instance's share of Subjects ("" alone: the whole stream)
	pos        map[string]uint64 // per filter: the stream sequence of the last message produced
	dirty      bool

	health *health
	nc     *natsgo.Conn
	js     jetstream.JetStream
	cons   jetstream.Consumer
	iter   jetstream.MessagesContext

	bound uint64 // Bounded: the stream's last sequence when it connected; 0 before
	ended bool
}

var (
	_ sdk.Resumable = (*Source)(nil)
	_ sdk.Closer    = (*Source)(nil)
)

// NewSource checks cfg and returns the factory of a JetStream source.
func NewSource(cfg SourceConfig) (sdk.Factory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return func() sdk.Operator { return &Source{cfg: cfg} }, nil
}

// Metadata implements sdk.Operator.
func (s *Source) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.cfg.Name, Outputs: []string{s.cfg.Output}, Parallelism: s.cfg.Parallelism, KeyGroups: s.cfg.KeyGroups}
}

// ResumesFromState implements sdk.Resumable: Poll writes the position of
// every filter to State in the attempt that produces its messages, and a
// new instance resumes from the positions State holds.
func (s *Source) ResumesFromState() {}

// Init reads the positions in State (of every key group the instance
// owns: after a rescale it may hold another instance's). It does not
// contact the servers (a source must start while they are down): the
// first Poll does.
func (s *Source) Init(ctx sdk.Context) error {
	info := ctx.Instance()
	s.op, s.index, s.par = info.Operator, info.Index, info.Parallelism
	s.log = ctx.Logger()
	s.filters = share(s.cfg.Subjects, s.index, s.par)
	s.pos = make(map[string]uint64, len(s.filters))
	s.health = &health{stats: s.cfg.Stats, conn: s.cfg.Connection}
	for _, f := range s.filters {
		v, err := ctx.State().Get(posKey(s.cfg.Stream, f))
		switch {
		case err == nil && len(v) == 8:
			s.pos[f] = binary.BigEndian.Uint64(v)
		case err == nil || errors.Is(err, sdk.ErrNotFound):
		default:
			return fmt.Errorf("nats source %q: read position of %q: %w", s.op, f, err)
		}
	}
	// A rescale may have left positions of our filters in other key
	// groups of ours: the furthest wins.
	err := sdk.ScanAllGroups(ctx.State(), []byte(posPrefix+s.cfg.Stream+"/"), func(key, value []byte) error {
		for _, f := range s.filters {
			if string(key) == string(posKey(s.cfg.Stream, f)) && len(value) == 8 {
				s.pos[f] = max(s.pos[f], binary.BigEndian.Uint64(value))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("nats source %q: read positions: %w", s.op, err)
	}
	return nil
}

// Poll produces the messages that arrived since the last Poll (at most
// MaxPollRecords, waiting at most PollTimeout for the first) and stores
// the positions in State in the same attempt. While the servers cannot
// be reached it returns an error wrapping sdk.ErrTransient (it names the
// outage and its length: the instance's status shows it); refused
// credentials are not transient. In Bounded mode it returns
// sdk.ErrEndOfStream once it produced what the stream held at start.
func (s *Source) Poll(ctx sdk.Context) error {
	if s.ended {
		return sdk.ErrEndOfStream
	}
	if s.iter == nil {
		if err := s.connect(ctx); err != nil {
			return err
		}
		if s.ended {
			return sdk.ErrEndOfStream
		}
	}
	n, bytes, err := s.read(ctx)
	s.cfg.Stats.add(int64(n), bytes)
	s.storePositions(ctx)
	if err != nil {
		return err
	}
	if s.ended {
		s.log.Info("nats source: bounded: read what the stream held at start", "stream", s.cfg.Stream, "last_sequence", s.bound)
		return sdk.ErrEndOfStream
	}
	if n == 0 {
		if u := s.health.unavailable(); u != nil {
			s.cfg.Stats.fail()
			return fmt.Errorf("nats source %q: %w: %w", s.op, sdk.ErrTransient, u)
		}
		if s.cfg.Bounded {
			return s.checkBound(ctx)
		}
	}
	return nil
}

// read produces messages from the iterator; see Poll.
func (s *Source) read(ctx sdk.Context) (n int, bytes int64, err error) {
	first, cancel := context.WithTimeout(ctx, s.cfg.PollTimeout)
	defer cancel()
	next, bursting := first, false
	for n < s.cfg.MaxPollRecords {
		m, err := s.iter.Next(jetstream.NextContext(next))
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, natsgo.ErrTimeout) || ctx.Err() != nil {
				return n, bytes, nil
			}
			s.stopConsumer()
			return n, bytes, s.health.failure(fmt.Sprintf("nats source %q: read stream %q", s.op, s.cfg.Stream), err)
		}
		if !bursting {
			b, cancel := context.WithTimeout(ctx, burst)
			defer cancel()
			next, bursting = b, true
		}
		produced, err := s.produce(ctx, m)
		if err != nil {
			return n, bytes, err
		}
		if produced {
			n++
			bytes += int64(len(m.Data()))
		}
		if s.ended {
			return n, bytes, nil
		}
	}
	return n, bytes, nil
}

// produce turns m into a record, unless its filter's position is past it
// (a filter resumed from an earlier sequence than its own position).
func (s *Source) produce(ctx sdk.Context, m jetstream.Msg) (bool, error) {
	meta, err := m.Metadata()
	if err != nil {
		return false, fmt.Errorf("nats source %q: message metadata: %w", s.op, err)
	}
	seq := meta.Sequence.Stream
	if s.cfg.Bounded && seq > s.bound {
		s.ended = true
		return false, nil
	}
	f := s.filterOf(m.Subject())
	if seq <= s.pos[f] {
		return false, nil
	}
	rec := sdk.Record{Key: []byte(m.Subject()), Value: m.Data(), EventTime: meta.Timestamp}
	hs := m.Headers()
	rec.Headers = make([]sdk.Header, 0, len(hs)+2)
	for _, k := range slices.Sorted(maps.Keys(hs)) {
		vs := hs[k]
		for _, v := range vs {
			rec.Headers = append(rec.Headers, sdk.Header{Key: k, Value: v})
		}
		if k == s.cfg.KeyHeader && len(vs) > 0 {
			rec.Key = []byte(vs[0])
		}
	}
	rec.Headers = append(rec.Headers, sdk.Header{Key: HeaderSubject, Value: m.Subject()},
		sdk.Header{Key: HeaderSequence, Value: strconv.FormatUint(seq, 10)})
	if err := ctx.Produce(s.cfg.Output, rec); err != nil {
		return false, fmt.Errorf("nats source %q: %w", s.op, err)
	}
	s.pos[f] = seq
	s.dirty = true
	s.cfg.Stats.setLag(s.index, meta.NumPending)
	if s.cfg.Bounded && (seq >= s.bound || meta.NumPending == 0) {
		s.ended = true
	}
	return true, nil
}

// filterOf returns the filter of this instance that subject falls under.
func (s *Source) filterOf(subject string) string {
	if len(s.filters) == 1 {
		return s.filters[0]
	}
	for _, f := range s.filters {
		if matches(f, subject) {
			return f
		}
	}
	return s.filters[0]
}

// storePositions writes the positions to State, in the Poll's attempt.
func (s *Source) storePositions(ctx sdk.Context) {
	if !s.dirty {
		return
	}
	for f, seq := range s.pos {
		ctx.State().Set(posKey(s.cfg.Stream, f), binary.BigEndian.AppendUint64(nil, seq))
	}
	s.dirty = false
}

// connect connects (once per instance), checks the stream and starts an
// ordered consumer of the instance's filters from the earliest position.
func (s *Source) connect(ctx sdk.Context) error {
	what := fmt.Sprintf("nats source %q", s.op)
	if s.nc == nil {
		nc, js, err := dial(s.cfg.Connection, what, s.health)
		if err != nil {
			return err
		}
		s.nc, s.js = nc, js
	}
	info, err := streamInfo(ctx, s.js, s.cfg.Stream, "SourceConfig.Stream", s.cfg.Connection.ConnectTimeout)
	if err != nil {
		return s.health.failure(what, err)
	}
	if s.cfg.Bounded && s.bound == 0 {
		s.bound = info.State.LastSeq
		if s.bound == 0 || s.minPos() >= s.bound {
			s.ended = true
			return nil
		}
	}
	occ := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy} // a unique name of nats.go's each time
	if start := s.minPos(); start > 0 {
		occ.DeliverPolicy, occ.OptStartSeq = jetstream.DeliverByStartSequencePolicy, start+1
	}
	if s.filters[0] != "" {
		occ.FilterSubjects = s.filters
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Connection.ConnectTimeout)
	defer cancel()
	cons, err := s.js.OrderedConsumer(cctx, s.cfg.Stream, occ)
	if err != nil {
		return s.health.failure(what+": ordered consumer", err)
	}
	iter, err := cons.Messages(jetstream.PullMaxMessages(s.cfg.MaxPollRecords))
	if err != nil {
		return s.health.failure(what+": ordered consumer", err)
	}
	s.cons, s.iter = cons, iter
	s.log.Info("nats source reading", "stream", s.cfg.Stream, "filters", s.filters, "from", occ.OptStartSeq, "positions", maps.Clone(s.pos))
	return nil
}

// minPos returns the smallest position of the instance's filters.
func (s *Source) minPos() uint64 {
	m := s.pos[s.filters[0]]
	for _, f := range s.filters[1:] {
		m = min(m, s.pos[f])
	}
	return m
}

// checkBound ends a bounded source whose consumer has nothing pending.
func (s *Source) checkBound(ctx context.Context) error {
	ictx, cancel := context.WithTimeout(ctx, s.cfg.Connection.ConnectTimeout)
	defer cancel()
	info, err := s.cons.Info(ictx)
	if err != nil {
		return nil // asked again after the next empty Poll
	}
	if info.NumPending == 0 && info.Delivered.Stream >= s.minPos() {
		s.ended = true
		return sdk.ErrEndOfStream
	}
	return nil
}

// stopConsumer stops the iterator; the next Poll starts another from the
// positions.
func (s *Source) stopConsumer() {
	if s.iter != nil {
		s.iter.Stop()
		s.iter, s.cons = nil, nil
	}
}

// Close implements sdk.Closer: it stops the consumer and closes the
// connection.
func (s *Source) Close(sdk.Context) error {
	s.stopConsumer()
	if s.nc != nil {
		s.nc.Close()
		s.nc = nil
	}
	if s.health != nil {
		s.health.close()
	}
	return nil
}

// ProcessRecord implements sdk.Operator; a source has no inputs.
func (s *Source) ProcessRecord(sdk.Context, sdk.Record) error { return nil }

// ProcessTimer implements sdk.Operator.
func (s *Source) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
