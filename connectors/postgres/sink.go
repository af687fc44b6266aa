package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/sdk"
)

// Sink is the PostgreSQL sink operator (see SinkConfig and the package
// documentation). The runtime calls its methods on the instance's
// goroutine; it starts no goroutine of its own.
type Sink struct {
	cfg SinkConfig

	op          string
	deadLetters string
	log         *slog.Logger
	w           *writer
	h           *health
	mapf        MapFunc

	// At-least-once and none: rows not yet written.
	buf      []row
	nextWarn time.Time // rate limit of the warning of a failed write

	// Exactly-once (eo.go).
	eo     bool
	origin int     // the instance's first key group: where its rows wait, its progress row's id
	seq    uint64  // of the last row put in state
	pend   []eoRow // the rows in state, in seq order (a mirror of it)
	marks  []mark  // what PreCommit recorded, in checkpoint order
	closed bool
}

var (
	_ sdk.Operator  = (*Sink)(nil)
	_ sdk.Flusher   = (*Sink)(nil)
	_ sdk.Committer = (*Sink)(nil)
	_ sdk.Closer    = (*Sink)(nil)
)

// NewSink checks cfg and returns the factory of a PostgreSQL sink
// operator.
func NewSink(cfg SinkConfig) (sdk.Factory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = DefaultSinkConfig(cfg)
	return func() sdk.Operator { return &Sink{cfg: cfg} }, nil
}

// Metadata implements sdk.Operator.
func (s *Sink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.cfg.Name, Inputs: s.cfg.Inputs, Parallelism: s.cfg.Parallelism, KeyGroups: s.cfg.KeyGroups,
		Outputs: []string{sdk.DeadLetterStream(s.cfg.Name)}}
}

// Init connects to the server and checks the table: it exists, has
// Columns, and a unique index on KeyColumns for upserts. A refusal (bad
// credentials, no such database, table or column) returns an error
// wrapping ErrRefused that names the setting to fix; an unreachable server
// one wrapping sdk.ErrTransient and ErrUnavailable. Under exactly-once it
// also creates the progress table if missing and reloads the rows waiting
// in State for their checkpoint's Commit.
func (s *Sink) Init(ctx sdk.Context) error {
	s.op = ctx.Instance().Operator
	s.deadLetters = sdk.DeadLetterStream(s.op)
	s.log = ctx.Logger()
	s.h = newHealth(s.cfg.Metrics, fmt.Sprintf("postgres sink %q", s.op))
	w, err := newWriter(s.cfg)
	if err != nil {
		return err
	}
	s.w = w
	cctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	if err := w.check(cctx); err != nil {
		w.drop()
		return s.h.failure(fmt.Sprintf("check table %s", s.cfg.Table), err)
	}
	s.h.up()
	s.mapf = s.cfg.Map
	if s.mapf == nil {
		s.mapf = jsonMapper{cols: s.cfg.Columns, oids: w.oids}.mapRecord
	}
	if ctx.Instance().Guarantee == sdk.ExactlyOnce {
		return s.initExactlyOnce(ctx)
	}
	return nil
}

// ProcessRecord maps rec to a row; a record that does not map goes to the
// dead-letter stream. Under exactly-once the row waits in State for its
// checkpoint (see Commit). Otherwise it is buffered and written once
// BatchRows are; a failed write is retried by Flush, and while
// MaxBufferedRows rows wait ProcessRecord retries itself, blocking the
// instance (backpressure) until the server is back or the instance stops.
func (s *Sink) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	if s.closed {
		return fmt.Errorf("postgres sink %q: closed", s.op)
	}
	vals, err := s.mapf(rec)
	if err == nil && len(vals) != len(s.cfg.Columns) {
		err = fmt.Errorf("Map returned %d values for %d Columns", len(vals), len(s.cfg.Columns))
	}
	if err != nil {
		dl := rec
		dl.Headers = append(append([]sdk.Header(nil), rec.Headers...),
			sdk.Header{Key: sdk.HeaderError, Value: "map: " + err.Error()},
			sdk.Header{Key: sdk.HeaderOperator, Value: s.op})
		return ctx.Produce(s.deadLetters, dl)
	}
	r := row{vals: vals, size: len(rec.Key) + len(rec.Value)}
	if s.eo {
		s.put(ctx, rec, r)
		return nil
	}
	s.buf = append(s.buf, r)
	if len(s.buf) < s.cfg.BatchRows {
		return nil
	}
	err = s.writeBuffered(ctx)
	if err == nil || len(s.buf) < s.cfg.MaxBufferedRows {
		s.warn(err)
		return nil
	}
	b := backoff.New(50*time.Millisecond, 2*time.Second, 0.2)
	for err != nil {
		if errors.Is(err, ErrRefused) {
			return err
		}
		s.warn(err)
		if !backoff.Sleep(ctx, b.Next()) {
			return fmt.Errorf("postgres sink %q: stopped with %d rows buffered: %w", s.op, len(s.buf), err)
		}
		err = s.writeBuffered(ctx)
	}
	return nil
}

// warn logs a failed write, at most once a second.
func (s *Sink) warn(err error) {
	if err == nil || time.Now().Before(s.nextWarn) {
		return
	}
	s.nextWarn = time.Now().Add(time.Second)
	s.log.Warn("postgres sink: write failed; retrying", "rows", len(s.buf), "error", err)
}

// writeBuffered writes the buffered rows in one transaction, BatchRows at
// a time; what was written leaves the buffer.
func (s *Sink) writeBuffered(ctx context.Context) error {
	for len(s.buf) > 0 {
		n := min(len(s.buf), s.cfg.BatchRows)
		batch := s.buf[:n]
		if err := s.w.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error { return s.w.write(ctx, tx, batch) }); err != nil {
			return s.h.failure(fmt.Sprintf("write %d rows", n), err)
		}
		s.h.ok(n, rowBytes(batch))
		s.buf = s.buf[n:]
	}
	s.buf = nil
	return nil
}

func rowBytes(rows []row) int {
	n := 0
	for _, r := range rows {
		n += r.size
	}
	return n
}

// Flush implements sdk.Flusher: it writes and commits the buffered rows
// (at-least-once and none). An error wraps sdk.ErrTransient while the
// server is unreachable or answers with a passing error: the runtime
// records it in the instance's status (LastError, TransientErrors) and
// flushes again at its next commit; the rows stay buffered. Under
// exactly-once it does nothing (Commit writes).
func (s *Sink) Flush(ctx sdk.Context) error {
	if s.eo || s.w == nil {
		return nil
	}
	return s.writeBuffered(ctx)
}

// Close implements sdk.Closer: it writes the buffered rows (for at most
// CloseTimeout) and closes the connection. Under exactly-once the rows in
// State stay there for Commit.
func (s *Sink) Close(sdk.Context) error {
	if s.closed || s.w == nil {
		return nil
	}
	s.closed = true
	var err error
	if !s.eo && len(s.buf) > 0 {
		// Not the instance's context: it is already cancelled when the
		// node stops, and the rows must still go out.
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CloseTimeout)
		err = s.writeBuffered(ctx)
		cancel()
		if err != nil {
			s.log.Error("postgres sink closed with rows not written; they are replayed only under at-least-once delivery", "rows", len(s.buf), "error", err)
		}
	}
	s.w.drop()
	s.h.close()
	return err
}

// ProcessTimer implements sdk.Operator.
func (s *Sink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
