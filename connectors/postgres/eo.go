package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sluicehq/sluice/sdk"
)

// Under exactly-once the sink keeps every row in State, in the instance's
// first key group, from ProcessRecord until the Commit of its checkpoint:
//
//	pg/r/<seq, 8 bytes BE>   → the record (key, value, event time, headers)
//	pg/c/<checkpoint, 8 BE>  → the seq of the last row before its barrier
//
// PreCommit(N) writes the mark of N; Commit(N) writes the rows of every
// mark up to N in one transaction that also moves the sink's progress row
// (sink, origin) → checkpoint to N, skipping the marks the progress row
// already covers; then it deletes those rows and marks from State. So a
// Commit repeated after a restore (State again holding rows already
// written) writes nothing twice, and a restore to a checkpoint before
// a row's drops it with the State that held it; nothing outside State is
// ever pending, so there is nothing to roll back in Init. Checkpoint ids
// only grow (they are times), even across rollbacks, so one progress row
// per instance suffices.

// State key prefixes.
const (
	rowPrefix  = "pg/r/"
	markPrefix = "pg/c/"
)

// eoRow is a row waiting in State.
type eoRow struct {
	seq uint64
	row
}

// mark is a checkpoint's barrier: the rows up to seq belong to it (or to
// an earlier one).
type mark struct {
	checkpoint, seq uint64
}

func stateKey(prefix string, n uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(prefix), n)
}

// initExactlyOnce creates the progress table and reloads what State holds.
func (s *Sink) initExactlyOnce(ctx sdk.Context) error {
	s.eo = true
	for i, in := range s.cfg.Inputs {
		if in.Routing == sdk.GroupBy {
			return fmt.Errorf("postgres sink %q: Inputs[%d] (%s): exactly-once keeps rows in the instance's first key group, so the input cannot be routed group-by; use shuffle or round-robin (and Parallelism 1 for upserts of one key in order)", s.op, i, in.Stream)
		}
	}
	s.origin = ctx.Instance().FirstGroup
	st := ctx.State()
	own, all := 0, 0
	count := func(n *int) func(k, v []byte) error { return func(k, v []byte) error { *n++; return nil } }
	if err := errors.Join(st.Scan([]byte("pg/"), count(&own)), sdk.ScanAllGroups(st, []byte("pg/"), count(&all))); err != nil {
		return fmt.Errorf("postgres sink %q: read state: %w", s.op, err)
	}
	if all != own {
		return fmt.Errorf("postgres sink %q: %d rows and marks of this sink wait in key groups the instance got from another (a rescale): an exactly-once PostgreSQL sink cannot be rescaled yet; deploy it again with its former Parallelism", s.op, all-own)
	}
	err := st.Scan([]byte(rowPrefix), func(k, v []byte) error {
		seq := binary.BigEndian.Uint64(k[len(rowPrefix):])
		rec, err := decodeRecord(v)
		if err != nil {
			return fmt.Errorf("row %d: %w", seq, err)
		}
		vals, err := s.mapf(rec)
		if err != nil {
			return fmt.Errorf("row %d no longer maps (Map must be deterministic): %w", seq, err)
		}
		s.pend = append(s.pend, eoRow{seq, row{vals, len(rec.Key) + len(rec.Value)}})
		s.seq = max(s.seq, seq)
		return nil
	})
	if err == nil {
		err = st.Scan([]byte(markPrefix), func(k, v []byte) error {
			m := mark{checkpoint: binary.BigEndian.Uint64(k[len(markPrefix):]), seq: binary.BigEndian.Uint64(v)}
			s.marks = append(s.marks, m)
			s.seq = max(s.seq, m.seq)
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("postgres sink %q: read state: %w", s.op, err)
	}
	parts, _ := parseTable(s.cfg.ProgressTable)
	q := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (sink text NOT NULL, origin int NOT NULL, checkpoint bigint NOT NULL,
		committed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (sink, origin))`, pgx.Identifier(parts).Sanitize())
	err = s.w.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error { _, err := tx.Exec(ctx, q); return err })
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P07") {
		err = nil // another instance created it meanwhile
	}
	if err != nil {
		return s.h.failure("create the progress table "+s.cfg.ProgressTable, err)
	}
	s.log.Debug("postgres sink: exactly-once", "rows waiting", len(s.pend), "marks", len(s.marks))
	return nil
}

// put keeps r, rec's row, in State until its checkpoint's Commit.
func (s *Sink) put(ctx sdk.Context, rec sdk.Record, r row) {
	s.seq++
	v := encodeRecord(rec)
	if o, ok := ctx.State().(sdk.OwnedSetter); ok {
		o.SetOwned(stateKey(rowPrefix, s.seq), v)
	} else {
		ctx.State().Set(stateKey(rowPrefix, s.seq), v)
	}
	s.pend = append(s.pend, eoRow{s.seq, r})
}

// PreCommit implements sdk.Committer. Under exactly-once it marks in State
// the rows before checkpoint's barrier (nothing is written to the server:
// the checkpoint holds them). Otherwise it writes the buffered rows, like
// Flush.
func (s *Sink) PreCommit(ctx sdk.Context, checkpoint uint64) error {
	if !s.eo {
		return s.Flush(ctx)
	}
	if len(s.pend) == 0 || (len(s.marks) > 0 && s.marks[len(s.marks)-1].seq >= s.seq) {
		return nil // no row since the last barrier
	}
	ctx.State().Set(stateKey(markPrefix, checkpoint), binary.BigEndian.AppendUint64(nil, s.seq))
	s.marks = append(s.marks, mark{checkpoint, s.seq})
	return nil
}

// Commit implements sdk.Committer. Under exactly-once it writes, in one
// transaction, the rows of checkpoint and of every earlier checkpoint not
// yet written, with the sink's progress row, skipping the checkpoints the
// progress row says were written already (so it is idempotent), then
// drops them from State. An error wraps sdk.ErrTransient (retried at the
// next completion, the rows kept) or ErrRefused. Otherwise it does
// nothing.
func (s *Sink) Commit(ctx sdk.Context, checkpoint uint64) error {
	if !s.eo {
		return nil
	}
	if s.closed {
		return fmt.Errorf("postgres sink %q: closed", s.op)
	}
	n := 0
	for n < len(s.marks) && s.marks[n].checkpoint <= checkpoint {
		n++
	}
	if n == 0 {
		return nil
	}
	marks := s.marks[:n]
	last := marks[n-1].seq
	parts, _ := parseTable(s.cfg.ProgressTable)
	prog := pgx.Identifier(parts).Sanitize()
	sink := s.cfg.Table + "/" + s.op
	var written []eoRow
	err := s.w.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO "+prog+" (sink, origin, checkpoint) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING", sink, s.origin); err != nil {
			return err
		}
		var done int64
		if err := tx.QueryRow(ctx, "SELECT checkpoint FROM "+prog+" WHERE sink = $1 AND origin = $2 FOR UPDATE", sink, s.origin).Scan(&done); err != nil {
			return err
		}
		from := uint64(0) // rows up to from were written by an earlier Commit
		for _, m := range marks {
			if m.checkpoint <= uint64(done) {
				from = m.seq
			}
		}
		written = nil
		rows := make([]row, 0, len(s.pend))
		for _, r := range s.pend {
			if r.seq > from && r.seq <= last {
				written = append(written, r)
				rows = append(rows, r.row)
			}
		}
		if err := s.w.write(ctx, tx, rows); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE "+prog+" SET checkpoint = GREATEST(checkpoint, $3), committed_at = now() WHERE sink = $1 AND origin = $2",
			sink, s.origin, int64(checkpoint))
		return err
	})
	if err != nil {
		return s.h.failure(fmt.Sprintf("commit checkpoint %d", checkpoint), err)
	}
	rows := make([]row, len(written))
	for i, r := range written {
		rows[i] = r.row
	}
	s.h.ok(len(written), rowBytes(rows))
	st := ctx.State()
	k := 0
	for ; k < len(s.pend) && s.pend[k].seq <= last; k++ {
		st.Delete(stateKey(rowPrefix, s.pend[k].seq))
	}
	s.pend = s.pend[k:]
	for _, m := range marks {
		st.Delete(stateKey(markPrefix, m.checkpoint))
	}
	s.marks = s.marks[n:]
	return nil
}

// encodeRecord is a record as State keeps it: uvarint-prefixed key and
// value, the event time (varint Unix nanoseconds, 0 for none), the number
// of headers and each uvarint-prefixed key and value.
func encodeRecord(rec sdk.Record) []byte {
	b := make([]byte, 0, len(rec.Key)+len(rec.Value)+16)
	b = binary.AppendUvarint(b, uint64(len(rec.Key)))
	b = append(b, rec.Key...)
	b = binary.AppendUvarint(b, uint64(len(rec.Value)))
	b = append(b, rec.Value...)
	var t int64
	if !rec.EventTime.IsZero() {
		t = rec.EventTime.UnixNano()
	}
	b = binary.AppendVarint(b, t)
	b = binary.AppendUvarint(b, uint64(len(rec.Headers)))
	for _, h := range rec.Headers {
		b = binary.AppendUvarint(b, uint64(len(h.Key)))
		b = append(b, h.Key...)
		b = binary.AppendUvarint(b, uint64(len(h.Value)))
		b = append(b, h.Value...)
	}
	return b
}

var errCorrupt = errors.New("postgres sink: corrupt record in state")

func decodeRecord(b []byte) (sdk.Record, error) {
	r := bytes.NewReader(b)
	bytesOf := func() ([]byte, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil || n > uint64(r.Len()) {
			return nil, errCorrupt
		}
		out := make([]byte, n)
		_, _ = r.Read(out)
		return out, nil
	}
	var rec sdk.Record
	var err error
	if rec.Key, err = bytesOf(); err != nil {
		return rec, err
	}
	if rec.Value, err = bytesOf(); err != nil {
		return rec, err
	}
	t, err := binary.ReadVarint(r)
	if err != nil {
		return rec, errCorrupt
	}
	if t != 0 {
		rec.EventTime = time.Unix(0, t)
	}
	nh, err := binary.ReadUvarint(r)
	if err != nil || nh > uint64(r.Len()) {
		return rec, errCorrupt
	}
	for range nh {
		k, err1 := bytesOf()
		v, err2 := bytesOf()
		if err1 != nil || err2 != nil {
			return rec, errCorrupt
		}
		rec.Headers = append(rec.Headers, sdk.Header{Key: string(k), Value: string(v)})
	}
	return rec, nil
}
