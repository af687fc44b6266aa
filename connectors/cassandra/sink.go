package cassandra

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/sdk"
)

// tsKey is the state key of the last write timestamp used at a barrier
// (8 bytes, big-endian µs), in the instance's first key group.
const tsKey = "cassandra/ts"

// Sink is the Cassandra sink operator (see SinkConfig and the package
// documentation). The runtime calls its methods on the instance's
// goroutine; a flush starts the goroutines of its concurrent requests and
// waits for them before it returns.
type Sink struct {
	cfg SinkConfig

	op   string
	log  *slog.Logger
	w    *writer
	h    *health
	mapf MapFunc
	eo   bool

	// The rows not yet written, one per primary key (a later record of a
	// key merges into its row: its set columns replace the row's).
	rows   []*row
	byKey  map[string]int // primary key → index in rows
	lastTS int64          // the last write timestamp used (µs)

	nextWarn time.Time // rate limit of the warning of a failed write
	closed   bool
}

var (
	_ sdk.Operator  = (*Sink)(nil)
	_ sdk.Flusher   = (*Sink)(nil)
	_ sdk.Committer = (*Sink)(nil)
	_ sdk.Closer    = (*Sink)(nil)
)

// NewSink checks cfg and returns the factory of a Cassandra sink
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
	return sdk.Metadata{Name: s.cfg.Name, Inputs: s.cfg.Inputs, Parallelism: s.cfg.Parallelism, KeyGroups: s.cfg.KeyGroups}
}

// Init connects to the cluster and checks the table: the keyspace and
// table exist, Columns are columns of it and include its primary key. A
// refusal (bad credentials or certificate, no such keyspace, table or
// column) returns an error wrapping ErrRefused that names the setting to
// fix; an unreachable cluster one wrapping sdk.ErrTransient and
// ErrUnavailable. Under exactly-once it reads the last write timestamp
// from State.
func (s *Sink) Init(ctx sdk.Context) error {
	s.op = ctx.Instance().Operator
	s.log = ctx.Logger()
	s.h = newHealth(s.cfg.Metrics, fmt.Sprintf("cassandra sink %q", s.op))
	s.byKey = map[string]int{}
	s.w = newWriter(s.cfg)
	cctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout+s.cfg.ConnectTimeout)
	defer cancel()
	if err := s.w.open(cctx, s.log); err != nil {
		return s.h.failure(fmt.Sprintf("open %s.%s on %v", s.cfg.Keyspace, s.cfg.Table, s.cfg.Hosts), err)
	}
	s.h.i.Up()
	s.mapf = s.cfg.Map
	if s.mapf == nil {
		s.mapf = jsonMapper{cols: s.cfg.Columns, types: s.w.types}.mapRecord
	}
	s.eo = ctx.Instance().Guarantee == sdk.ExactlyOnce
	if s.eo {
		// Every key group the instance owns: after a rescale the newest
		// of its predecessors' timestamps.
		err := sdk.ScanAllGroups(ctx.State(), []byte(tsKey), func(_, v []byte) error {
			if len(v) == 8 {
				s.lastTS = max(s.lastTS, int64(binary.BigEndian.Uint64(v)))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("cassandra sink %q: read state: %w", s.op, err)
		}
	}
	return nil
}

// ProcessRecord maps rec to a row and buffers it, merged into the row of
// its primary key if one is buffered; a record that does not map goes to
// the dead-letter stream (the error wraps sdk.ErrBadRecord). Once MaxBufferedRows rows are buffered it
// writes them at once; while that fails it retries, blocking the instance
// (backpressure) until the cluster is back or the instance stops.
func (s *Sink) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	if s.closed {
		return fmt.Errorf("cassandra sink %q: closed", s.op)
	}
	r, err := s.toRow(rec)
	if err != nil {
		// The runtime undoes the attempt and dead-letters the record.
		return fmt.Errorf("cassandra sink %q: map: %w: %w", s.op, sdk.ErrBadRecord, err)
	}
	k := keyOf(r, s.w.key)
	if i, ok := s.byKey[k]; ok {
		old := s.rows[i]
		for c, v := range r.cells {
			if !v.unset {
				old.size += len(v.b) - len(old.cells[c].b)
				old.cells[c] = v
			}
		}
	} else {
		s.byKey[k] = len(s.rows)
		s.rows = append(s.rows, r)
	}
	if len(s.rows) < s.cfg.MaxBufferedRows {
		return nil
	}
	b := backoff.New(50*time.Millisecond, 2*time.Second, 0.2)
	for {
		err := s.flush(ctx, s.clockTS())
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrRefused) {
			return err
		}
		s.warn(err)
		if !backoff.Sleep(ctx, b.Next()) {
			return fmt.Errorf("cassandra sink %q: stopped with %d rows buffered: %w", s.op, len(s.rows), err)
		}
	}
}

// toRow maps and marshals rec; the error says why it cannot be written.
func (s *Sink) toRow(rec sdk.Record) (*row, error) {
	vals, err := s.mapf(rec)
	if err != nil {
		return nil, err
	}
	r, err := marshalRow(s.cfg.Columns, s.w.types, vals)
	if err != nil {
		return nil, err
	}
	for _, i := range s.w.key {
		if c := r.cells[i]; c.null || c.unset {
			return nil, fmt.Errorf("primary key column %q is missing or null", s.cfg.Columns[i])
		}
	}
	if len(s.w.part) == 1 && len(r.cells[s.w.part[0]].b) == 0 {
		return nil, fmt.Errorf("partition key column %q is empty", s.cfg.Columns[s.w.part[0]])
	}
	return r, nil
}

// clockTS returns the write timestamp of a flush between barriers: the
// host's clock, after every timestamp used before.
func (s *Sink) clockTS() int64 { return max(time.Now().UnixMicro(), s.lastTS+1) }

// flush writes the buffered rows at timestamp ts; the rows written leave
// the buffer, the others stay for the next flush. The error wraps
// ErrRefused or sdk.ErrTransient (see health.failure).
func (s *Sink) flush(ctx context.Context, ts int64) error {
	if len(s.rows) == 0 {
		return nil // nothing sent: an outage is over only once the cluster answers
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	errs := s.w.write(ctx, s.rows, ts)
	s.lastTS = ts // even if some failed: they may have landed
	var first error
	keep := s.rows[:0]
	clear(s.byKey)
	written, size := 0, 0
	for i, r := range s.rows {
		if errs[i] == nil {
			written++
			size += r.size
			continue
		}
		if first == nil {
			first = errs[i]
		}
		s.byKey[keyOf(r, s.w.key)] = len(keep)
		keep = append(keep, r)
	}
	clear(s.rows[len(keep):])
	s.rows = keep
	s.h.i.Wrote(written, size)
	if first != nil {
		return s.h.failure(fmt.Sprintf("write %d of %d rows", len(keep), len(keep)+written), first)
	}
	s.h.i.Up()
	return nil
}

// warn logs a failed write, at most once a second.
func (s *Sink) warn(err error) {
	if time.Now().Before(s.nextWarn) {
		return
	}
	s.nextWarn = time.Now().Add(time.Second)
	s.log.Warn("cassandra sink: write failed; retrying", "rows", len(s.rows), "error", err)
}

// PreCommit implements sdk.Committer. Under exactly-once it writes every
// buffered row at the write timestamp of checkpoint (its id's time in µs,
// after every timestamp used before) and returns once all are
// acknowledged, so that a completed checkpoint's rows are in the table; a
// failure fails the checkpoint and keeps the rows not written for the
// next barrier. Otherwise it flushes, like Flush.
func (s *Sink) PreCommit(ctx sdk.Context, checkpoint uint64) error {
	if !s.eo {
		return s.Flush(ctx)
	}
	if s.closed {
		return fmt.Errorf("cassandra sink %q: closed", s.op)
	}
	ts := max(int64(checkpoint/1000), s.lastTS+1)
	if err := s.flush(ctx, ts); err != nil {
		return err
	}
	ctx.State().Set([]byte(tsKey), binary.BigEndian.AppendUint64(nil, uint64(s.lastTS)))
	return nil
}

// Commit implements sdk.Committer: nothing is left to do, PreCommit wrote
// the rows (a Commit repeated after a restore is a no-op too).
func (s *Sink) Commit(sdk.Context, uint64) error { return nil }

// Flush implements sdk.Flusher: under at-least-once and none it writes the
// buffered rows at the host's clock. An error wraps sdk.ErrTransient while
// the cluster is unreachable or answers with a passing error: the runtime
// records it in the instance's status (LastError, TransientErrors) and
// flushes again at its next commit; the rows stay buffered. Under
// exactly-once it does nothing (PreCommit writes).
func (s *Sink) Flush(ctx sdk.Context) error {
	if s.eo || s.w == nil || s.closed {
		return nil
	}
	return s.flush(ctx, s.clockTS())
}

// Close implements sdk.Closer: under at-least-once and none it writes the
// buffered rows (for at most CloseTimeout); under exactly-once it drops
// them (they follow the last checkpoint, so they are replayed). Then it
// closes the session. Safe to call twice.
func (s *Sink) Close(sdk.Context) error {
	if s.closed || s.w == nil {
		return nil
	}
	s.closed = true
	var err error
	if !s.eo && len(s.rows) > 0 {
		// Not the instance's context: it is already cancelled when the
		// node stops, and the rows must still go out.
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CloseTimeout)
		err = s.flush(ctx, s.clockTS())
		cancel()
		if err != nil {
			s.log.Error("cassandra sink closed with rows not written; they are replayed only under at-least-once delivery", "rows", len(s.rows), "error", err)
		}
	}
	s.w.close()
	s.h.i.Close()
	return err
}

// ProcessTimer implements sdk.Operator.
func (s *Sink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
