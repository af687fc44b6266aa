package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// row is one record's values, in SinkConfig.Columns order, and the size
// of the record it came from (for Metrics.Bytes).
type row struct {
	vals []any
	size int
}

// writer writes rows into the table over one connection, opened on
// demand and dropped after any failure (pgx connections are not usable
// after a network error). Used on the instance's goroutine only.
type writer struct {
	cfg    SinkConfig
	conn   *pgconn.Config
	table  pgx.Identifier
	cols   []string // Columns
	keys   []int    // indexes in cols of KeyColumns; nil: plain inserts
	upsert string   // INSERT … SELECT … FROM stage ON CONFLICT …; "" without KeyColumns
	stage  string   // the temporary staging table of upserts

	oids []uint32 // the type of each column, read by check

	c      *pgx.Conn
	staged bool // the staging table exists on c
}

func newWriter(cfg SinkConfig) (*writer, error) {
	pc, err := cfg.connConfig()
	if err != nil {
		return nil, err
	}
	parts, _ := parseTable(cfg.Table)
	w := &writer{cfg: cfg, conn: pc, table: pgx.Identifier(parts), cols: cfg.Columns, stage: "sluice_stage"}
	if len(cfg.KeyColumns) > 0 {
		var set []string
		for i, c := range cfg.Columns {
			key := false
			for _, k := range cfg.KeyColumns {
				if k == c {
					key = true
					w.keys = append(w.keys, i)
				}
			}
			if !key {
				q := quote(c)
				set = append(set, q+" = EXCLUDED."+q)
			}
		}
		action := "DO NOTHING"
		if len(set) > 0 {
			action = "DO UPDATE SET " + strings.Join(set, ", ")
		}
		w.upsert = fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s ON CONFLICT (%s) %s",
			w.table.Sanitize(), quoteAll(cfg.Columns), quoteAll(cfg.Columns), quote(w.stage), quoteAll(cfg.KeyColumns), action)
	}
	return w, nil
}

func quote(s string) string { return pgx.Identifier{s}.Sanitize() }

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return strings.Join(q, ", ")
}

// connect returns the connection, opening it if needed.
func (w *writer) connect(ctx context.Context) (*pgx.Conn, error) {
	if w.c != nil {
		return w.c, nil
	}
	cc, err := pgx.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cc.Config = *w.conn.Copy()
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	w.c, w.staged = c, false
	return c, nil
}

// drop closes the connection after a failure.
func (w *writer) drop() {
	if w.c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.CloseTimeout/4)
		_ = w.c.Close(ctx)
		cancel()
		w.c = nil
	}
}

// check verifies that the table and columns exist and that KeyColumns
// have a unique index, without writing: the plan of the statements the
// sink runs.
func (w *writer) check(ctx context.Context) error {
	c, err := w.connect(ctx)
	if err != nil {
		return err
	}
	sel := fmt.Sprintf("SELECT %s FROM %s LIMIT 0", quoteAll(w.cols), w.table.Sanitize())
	rs, err := c.Query(ctx, sel)
	if err != nil {
		return err
	}
	w.oids = w.oids[:0]
	for _, fd := range rs.FieldDescriptions() {
		w.oids = append(w.oids, fd.DataTypeOID)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	if w.upsert != "" {
		// The arbiter index of ON CONFLICT is inferred when planning.
		q := fmt.Sprintf("EXPLAIN INSERT INTO %s (%s) %s ON CONFLICT (%s) DO NOTHING",
			w.table.Sanitize(), quoteAll(w.cols), sel, quoteAll(w.cfg.KeyColumns))
		if _, err := c.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// write writes rows in tx: COPY into the table, or, for upserts, the rows
// deduplicated by key (the last wins, as applying them in order would
// leave it) COPYed into the staging table and upserted from there.
func (w *writer) write(ctx context.Context, tx pgx.Tx, rows []row) error {
	if len(rows) == 0 {
		return nil
	}
	if w.upsert == "" {
		_, err := tx.CopyFrom(ctx, w.table, w.cols, &rowSource{rows: rows})
		return err
	}
	if !w.staged {
		q := fmt.Sprintf("CREATE TEMPORARY TABLE IF NOT EXISTS %s (LIKE %s INCLUDING DEFAULTS) ON COMMIT DELETE ROWS",
			quote(w.stage), w.table.Sanitize())
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
		w.staged = true // if tx fails, so does the connection's use: drop resets it
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{w.stage}, w.cols, &rowSource{rows: w.dedupe(rows)}); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, w.upsert)
	return err
}

// dedupe keeps the last row of each key, in the order of their last
// occurrence (ON CONFLICT DO UPDATE may touch a row once per statement).
func (w *writer) dedupe(rows []row) []row {
	last := make(map[string]int, len(rows))
	var b strings.Builder
	for i, r := range rows {
		b.Reset()
		for _, k := range w.keys {
			fmt.Fprintf(&b, "%T\x00%v\x00", r.vals[k], r.vals[k])
		}
		last[b.String()] = i
	}
	if len(last) == len(rows) {
		return rows
	}
	out := make([]row, 0, len(last))
	for i, r := range rows {
		b.Reset()
		for _, k := range w.keys {
			fmt.Fprintf(&b, "%T\x00%v\x00", r.vals[k], r.vals[k])
		}
		if last[b.String()] == i {
			out = append(out, r)
		}
	}
	return out
}

// rowSource is a pgx.CopyFromSource over rows.
type rowSource struct {
	rows []row
	i    int
}

func (s *rowSource) Next() bool             { s.i++; return s.i <= len(s.rows) }
func (s *rowSource) Values() ([]any, error) { return s.rows[s.i-1].vals, nil }
func (s *rowSource) Err() error             { return nil }

// inTx runs fn in a transaction on the connection, bounded by
// WriteTimeout; on failure the connection is dropped.
func (w *writer) inTx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.WriteTimeout)
	defer cancel()
	err := func() error {
		c, err := w.connect(ctx)
		if err != nil {
			return err
		}
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error { return fn(ctx, tx) })
	}()
	if err != nil {
		w.drop()
	}
	return err
}
