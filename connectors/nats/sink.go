package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/sdk"
)

// Sink is the JetStream sink operator (see SinkConfig and the package
// documentation). The runtime calls its methods on the instance's
// goroutine.
type Sink struct {
	cfg SinkConfig

	op     string
	log    *slog.Logger
	health *health
	nc     *natsgo.Conn
	js     jetstream.JetStream
	pubOpt []jetstream.PublishOpt

	// At-least-once and no guarantee: publishes awaiting their ack.
	pending []jetstream.PubAckFuture
	retry   []*natsgo.Msg // publishes that failed, sent again by Flush

	// Exactly-once (sink_eo.go).
	eo       bool
	group    int                 // the instance's first key group: its records wait there
	epoch    uint64              // records since the last barrier belong to this epoch
	next     uint64              // the index of the epoch's next record
	pub      *publisher          // started by the first Commit with records
	inflight map[uint64]struct{} // epochs handed to pub, not yet reported
	acked    map[uint64]uint64   // epochs acknowledged (→ last index), deleted by the next PreCommit
}

var (
	_ sdk.Committer = (*Sink)(nil)
	_ sdk.Flusher   = (*Sink)(nil)
	_ sdk.Closer    = (*Sink)(nil)
)

// NewSink checks cfg and returns the factory of a JetStream sink.
func NewSink(cfg SinkConfig) (sdk.Factory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return func() sdk.Operator { return &Sink{cfg: cfg} }, nil
}

// Metadata implements sdk.Operator.
func (s *Sink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.cfg.Name, Inputs: s.cfg.Inputs, Parallelism: s.cfg.Parallelism}
}

// Init prepares the instance; it does not contact the servers (the first
// publish does). Under exactly-once it finds in State where the records
// since the last barrier stand.
func (s *Sink) Init(ctx sdk.Context) error {
	info := ctx.Instance()
	s.op, s.log = info.Operator, ctx.Logger()
	s.health = &health{stats: s.cfg.Stats, conn: s.cfg.Connection}
	if s.cfg.Stream != "" {
		s.pubOpt = []jetstream.PublishOpt{jetstream.WithExpectStream(s.cfg.Stream)}
	}
	if info.Guarantee == sdk.ExactlyOnce {
		return s.initExactlyOnce(ctx)
	}
	return nil
}

// connect connects once per instance; under exactly-once it checks the
// stream's duplicate window.
func (s *Sink) connect(ctx context.Context) error {
	if s.nc != nil {
		return nil
	}
	what := fmt.Sprintf("nats sink %q", s.op)
	nc, js, err := dial(s.cfg.Connection, what, s.health, jetstream.WithPublishAsyncMaxPending(s.cfg.MaxPending))
	if err != nil {
		return err
	}
	if s.cfg.Stream != "" {
		info, err := streamInfo(ctx, js, s.cfg.Stream, "SinkConfig.Stream", s.cfg.Connection.ConnectTimeout)
		if err != nil {
			nc.Close()
			return s.health.failure(what, err)
		}
		if s.eo && info.Config.Duplicates < s.cfg.MinDuplicateWindow {
			nc.Close()
			return fmt.Errorf("%s: %w: stream %q keeps message ids for %v, less than SinkConfig.MinDuplicateWindow %v: a commit repeated after a recovery could publish twice; raise the stream's duplicate_window (nats stream edit %s --dupe-window) above the worst recovery time",
				what, ErrDuplicateWindow, s.cfg.Stream, info.Config.Duplicates, s.cfg.MinDuplicateWindow, s.cfg.Stream)
		}
	}
	s.nc, s.js = nc, js
	return nil
}

// message makes the message of rec: its subject, headers and value.
func (s *Sink) message(rec sdk.Record) *natsgo.Msg {
	m := &natsgo.Msg{Subject: s.subject(rec), Data: rec.Value}
	if len(rec.Headers) > 0 {
		m.Header = make(natsgo.Header, len(rec.Headers))
		for _, h := range rec.Headers {
			m.Header.Add(h.Key, h.Value)
		}
	}
	return m
}

// subject returns the subject of rec: its SubjectHeader, else Subject
// (with its key under SubjectFromKey).
func (s *Sink) subject(rec sdk.Record) string {
	if s.cfg.SubjectHeader != "" {
		for _, h := range rec.Headers {
			if h.Key == s.cfg.SubjectHeader && h.Value != "" {
				return h.Value
			}
		}
	}
	if !s.cfg.SubjectFromKey || len(rec.Key) == 0 {
		return s.cfg.Subject
	}
	return s.cfg.Subject + "." + string(rec.Key)
}

// ProcessRecord publishes rec asynchronously (its ack is awaited by
// Flush); under exactly-once it keeps it in State until its checkpoint's
// Commit publishes it.
func (s *Sink) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	if s.eo {
		s.keep(ctx, rec)
		return nil
	}
	if err := s.connect(ctx); err != nil {
		return err
	}
	return s.publish(s.message(rec))
}

// publish hands m to the async publisher, waiting for the oldest ack
// when MaxPending publishes are in flight.
func (s *Sink) publish(m *natsgo.Msg) error {
	if len(s.pending) >= s.cfg.MaxPending {
		if err := s.await(context.Background(), s.pending[:len(s.pending)/4]); err != nil {
			return err
		}
	}
	f, err := s.js.PublishMsgAsync(m, s.pubOpt...)
	if err != nil {
		s.retry = append(s.retry, m)
		return nil // Flush sends it again, and fails until it is acknowledged
	}
	s.pending = append(s.pending, f)
	return nil
}

// await waits for the acks of fs (a prefix of s.pending), which it then
// drops from s.pending; failed publishes go to s.retry. It returns an
// error only when ctx or FlushTimeout ends first.
func (s *Sink) await(ctx context.Context, fs []jetstream.PubAckFuture) error {
	t := time.NewTimer(s.cfg.FlushTimeout)
	defer t.Stop()
	done := 0
	var msgs, bytes int64
	defer func() {
		s.pending = s.pending[done:]
		s.cfg.Stats.add(msgs, bytes)
	}()
	for _, f := range fs {
		select {
		case ack := <-f.Ok():
			msgs++
			bytes += int64(len(f.Msg().Data))
			if ack.Duplicate && s.cfg.Stats != nil {
				s.cfg.Stats.duplicates.Add(1)
			}
		case <-f.Err():
			s.cfg.Stats.fail()
			s.retry = append(s.retry, f.Msg())
		case <-t.C:
			return s.health.failure(fmt.Sprintf("nats sink %q", s.op), fmt.Errorf("%w within SinkConfig.FlushTimeout %v: %d publishes", ErrPublish, s.cfg.FlushTimeout, len(fs)-done))
		case <-ctx.Done():
			return ctx.Err()
		}
		done++
	}
	return nil
}

// Flush implements sdk.Flusher: it waits until the server acknowledged
// every publish so far (sending failed ones again). It returns an error
// wrapping sdk.ErrTransient while some is not acknowledged. Under
// exactly-once it does nothing (Commit publishes).
func (s *Sink) Flush(ctx sdk.Context) error {
	if s.eo || s.js == nil {
		return nil
	}
	return s.flush(ctx)
}

// flush waits for the acks of every publish so far, sending failed ones
// again, for at most FlushTimeout.
func (s *Sink) flush(ctx context.Context) error {
	deadline := time.Now().Add(s.cfg.FlushTimeout)
	for {
		if err := s.await(ctx, s.pending); err != nil {
			return err
		}
		if len(s.retry) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return s.health.failure(fmt.Sprintf("nats sink %q", s.op), fmt.Errorf("%w: %d publishes failed", ErrPublish, len(s.retry)))
		}
		retry := s.retry
		s.retry = nil
		for _, m := range retry {
			if err := s.publish(m); err != nil {
				return err
			}
		}
		if len(s.retry) > 0 {
			if err := s.waitConnected(ctx, deadline); err != nil {
				return err
			}
		}
	}
}

// waitConnected waits until the connection is up or deadline passes.
func (s *Sink) waitConnected(ctx context.Context, deadline time.Time) error {
	for !s.nc.IsConnected() {
		if time.Now().After(deadline) {
			return s.health.failure(fmt.Sprintf("nats sink %q", s.op), errors.New("not connected"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(s.cfg.Connection.ReconnectWait): // the client's own reconnect cadence
		}
	}
	return nil
}

// Close implements sdk.Closer: it waits (at most FlushTimeout) for the
// acks of what was published, then closes the connection. Under
// exactly-once nothing is lost: what is not committed waits in State.
func (s *Sink) Close(ctx sdk.Context) error {
	if s.pub != nil {
		s.pub.close()
		s.pub = nil
	}
	var err error
	if s.js != nil && !s.eo {
		err = s.await(ctx, s.pending)
	}
	if s.nc != nil {
		s.nc.Close()
		s.nc = nil
	}
	if s.health != nil {
		s.health.close()
	}
	return err
}

// ProcessTimer implements sdk.Operator.
func (s *Sink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
