package http

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	nethttp "net/http"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// idemPrefix starts the state keys of remembered idempotency keys:
// "http/idem/<key>" → when it expires (Unix nanoseconds, 8 bytes big
// endian).
const idemPrefix = "http/idem/"

// shutdownTimeout bounds Close's wait for handlers to answer.
const shutdownTimeout = 5 * time.Second

// Source is the webhook source operator (see SourceConfig and the package
// documentation). The runtime calls its methods on the instance's
// goroutine; the server's handlers reach it only through the queue.
type Source struct {
	cfg SourceConfig

	op        string
	index     int
	guarantee sdk.Guarantee
	log       *slog.Logger
	srv       *server

	seq      uint64               // the last request produced
	unacked  []*request           // produced, not yet answered, in order of seq
	sealed   map[uint64]uint64    // exactly-once: checkpoint → the last seq before its barrier
	redo     []*request           // at-least-once: rewound, produced again by the next Poll
	seen     map[string]time.Time // idempotency keys → expiry
	prunedAt time.Time
}

var (
	_ sdk.Resumable  = (*Source)(nil)
	_ sdk.Committer  = (*Source)(nil)
	_ sdk.Replayable = (*Source)(nil)
	_ sdk.Closer     = (*Source)(nil)
)

// NewSource checks cfg and returns the factory of a webhook source.
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

// ResumesFromState implements sdk.Resumable: the source has no position:
// what a restored checkpoint does not hold was never acknowledged, and
// its clients send it again. State holds the idempotency keys produced.
func (s *Source) ResumesFromState() {}

// Init reads the idempotency keys State holds and starts the server on
// the instance's address.
func (s *Source) Init(ctx sdk.Context) error {
	info := ctx.Instance()
	s.op, s.index, s.guarantee, s.log = info.Operator, info.Index, info.Guarantee, ctx.Logger()
	s.sealed = map[uint64]uint64{}
	s.seen = map[string]time.Time{}
	err := sdk.ScanAllGroups(ctx.State(), []byte(idemPrefix), func(key, value []byte) error {
		if len(value) == 8 {
			s.seen[string(key[len(idemPrefix):])] = time.Unix(0, int64(binary.BigEndian.Uint64(value)))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("http source %q: read idempotency keys: %w", s.op, err)
	}
	srv, err := startServer(s.cfg, s.index)
	if err != nil {
		return fmt.Errorf("http source %q: %w", s.op, err)
	}
	s.srv = srv
	s.cfg.Stats.setAddr(s.index, srv.ln.Addr().String())
	s.log.Info("http source listening", "addr", srv.ln.Addr().String(), "tls", s.cfg.TLS != nil, "guarantee", s.guarantee)
	return nil
}

// Poll produces the records of the queued requests (at most
// MaxPollRecords, beyond one request's; waiting at most PollTimeout for
// the first). A request repeating a remembered Idempotency-Key produces
// nothing and is answered with the next acknowledgement. Without a
// guarantee the requests are answered at once; otherwise when they are
// durable (Commit, Durable).
func (s *Source) Poll(ctx sdk.Context) error {
	if err := s.srv.failure(); err != nil {
		return fmt.Errorf("http source %q: server stopped: %w", s.op, err)
	}
	s.prune(ctx)
	n := 0
	for len(s.redo) > 0 && n < s.cfg.MaxPollRecords {
		req := s.redo[0]
		s.redo = s.redo[1:]
		if err := s.produce(ctx, req); err != nil {
			return err
		}
		n += len(req.recs)
	}
	wait := time.NewTimer(s.cfg.PollTimeout)
	defer wait.Stop()
	for n < s.cfg.MaxPollRecords {
		var req *request
		if n == 0 {
			select {
			case req = <-s.srv.queue:
			case <-wait.C:
				return nil
			case <-ctx.Done():
				return nil
			}
		} else {
			select {
			case req = <-s.srv.queue:
			default:
				return nil
			}
		}
		s.cfg.Stats.Queued.Add(-1)
		if err := s.take(ctx, req); err != nil {
			return err
		}
		n += max(len(req.recs), 1)
	}
	return nil
}

// take produces a new request's records (none for a duplicate).
func (s *Source) take(ctx sdk.Context, req *request) error {
	if req.key != "" && s.cfg.IdempotencyWindow > 0 {
		if exp, ok := s.seen[req.key]; ok && time.Now().Before(exp) {
			req.dup, req.recs = true, nil
			s.cfg.Stats.Duplicates.Add(1)
		} else {
			exp := time.Now().Add(s.cfg.IdempotencyWindow)
			s.seen[req.key] = exp
			ctx.State().Set([]byte(idemPrefix+req.key), binary.BigEndian.AppendUint64(nil, uint64(exp.UnixNano())))
		}
	}
	s.seq++
	req.seq = s.seq
	return s.produce(ctx, req)
}

// produce produces req's records and keeps it until it is answered.
func (s *Source) produce(ctx sdk.Context, req *request) error {
	for _, rec := range req.recs {
		if err := ctx.Produce(s.cfg.Output, rec); err != nil {
			return fmt.Errorf("http source %q: %w", s.op, err)
		}
		s.cfg.Stats.Records.Add(1)
		s.cfg.Stats.Bytes.Add(int64(len(rec.Value)))
	}
	if s.guarantee == sdk.NoGuarantee {
		req.reply(ok(req))
		return nil
	}
	if s.guarantee == sdk.ExactlyOnce {
		req.recs = nil // a restore makes the client send them again
	}
	s.unacked = append(s.unacked, req)
	return nil
}

func ok(req *request) answer {
	if req.dup {
		return answer{nethttp.StatusOK, "duplicate: the records of this Idempotency-Key were accepted before"}
	}
	return answer{nethttp.StatusOK, fmt.Sprintf("accepted %d records", req.n)}
}

// ackThrough answers the requests produced up to seq.
func (s *Source) ackThrough(seq uint64) {
	i := 0
	for ; i < len(s.unacked) && s.unacked[i].seq <= seq; i++ {
		s.unacked[i].reply(ok(s.unacked[i]))
	}
	s.unacked = s.unacked[i:]
}

// prune forgets expired idempotency keys, at most once a minute.
func (s *Source) prune(ctx sdk.Context) {
	now := time.Now()
	if now.Sub(s.prunedAt) < time.Minute {
		return
	}
	s.prunedAt = now
	for k, exp := range s.seen {
		if now.After(exp) {
			delete(s.seen, k)
			// An entry in another key group (after a rescale) stays in
			// State; it is ignored once expired.
			ctx.State().Delete([]byte(idemPrefix + k))
		}
	}
}

// PreCommit implements sdk.Committer: the requests produced before the
// barrier belong to checkpoint.
func (s *Source) PreCommit(_ sdk.Context, checkpoint uint64) error {
	s.sealed[checkpoint] = s.seq
	return nil
}

// Commit implements sdk.Committer: the requests of checkpoint and earlier
// ones are durable and answered 200. After a restore nothing is waiting:
// the requests of the restored checkpoint were answered by the instance
// before, or their clients saw the connection fail and send them again.
func (s *Source) Commit(_ sdk.Context, checkpoint uint64) error {
	var through uint64
	for id, seq := range s.sealed {
		if id <= checkpoint {
			through = max(through, seq)
			delete(s.sealed, id)
		}
	}
	s.ackThrough(through)
	return nil
}

// Position implements sdk.Replayable (at-least-once): the last request
// produced.
func (s *Source) Position() any { return s.seq }

// Durable implements sdk.Replayable: the requests produced up to pos are
// answered 200.
func (s *Source) Durable(_ sdk.Context, pos any) {
	if seq, isSeq := pos.(uint64); isSeq {
		s.ackThrough(seq)
	}
}

// Rewind implements sdk.Replayable: the records of the requests not yet
// durable are produced again by the next Poll.
func (s *Source) Rewind(sdk.Context) error {
	s.redo = append(append([]*request(nil), s.unacked...), s.redo...)
	s.unacked = nil
	return nil
}

// Close implements sdk.Closer: the server stops; every request not yet
// answered is answered 503 with Retry-After (its client sends it again).
func (s *Source) Close(sdk.Context) error {
	if s.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := s.srv.close(ctx)
	s.unacked, s.redo = nil, nil
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("http source %q: close: %w", s.op, err)
	}
	return nil
}

// ProcessRecord implements sdk.Operator; a source has no inputs.
func (s *Source) ProcessRecord(sdk.Context, sdk.Record) error { return nil }

// ProcessTimer implements sdk.Operator.
func (s *Source) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
