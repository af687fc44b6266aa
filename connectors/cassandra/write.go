package cassandra

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/gocql/gocql"
)

// cell is one column's value as sent: marshaled bytes, a null, or unset
// (the column is left as it is).
type cell struct {
	b           []byte
	null, unset bool
}

// arg returns the cell as a driver argument.
func (c cell) arg() any {
	switch {
	case c.unset:
		return gocql.UnsetValue
	case c.null:
		return nil
	}
	return raw(c.b)
}

// raw is a value marshaled already (by marshalRow, with the column's
// type).
type raw []byte

// MarshalCQL implements gocql.Marshaler.
func (r raw) MarshalCQL(gocql.TypeInfo) ([]byte, error) { return r, nil }

// row is a record's values, in SinkConfig.Columns order.
type row struct {
	cells []cell
	size  int // bytes of the values
}

// refusalError is a refusal found by the sink itself (a schema check).
type refusalError struct{ msg, hint string }

func (e *refusalError) Error() string { return e.msg }

// writer writes rows to the table over one driver session, opened by
// open. write runs on the instance's goroutine and starts, and waits for,
// the goroutines of its concurrent requests; the session is safe for
// their concurrent use.
type writer struct {
	cfg    SinkConfig
	cl     gocql.Consistency
	sess   *gocql.Session
	insert string           // INSERT INTO "ks"."t" ("a", …) VALUES (?, …)
	types  []gocql.TypeInfo // of Columns, from the prepared INSERT
	part   []int            // indexes in Columns of the partition key, in order
	key    []int            // of the primary key (partition key, then clustering)
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func newWriter(cfg SinkConfig) *writer {
	q := make([]string, len(cfg.Columns))
	for i, c := range cfg.Columns {
		q[i] = quote(c)
	}
	cl, _ := parseConsistency(cfg.Consistency)
	return &writer{cfg: cfg, cl: cl, insert: fmt.Sprintf("INSERT INTO %s.%s (%s) VALUES (%s)", quote(cfg.Keyspace),
		quote(cfg.Table), strings.Join(q, ", "), strings.TrimSuffix(strings.Repeat("?, ", len(q)), ", "))}
}

// open connects, checks that the keyspace, table and columns exist and
// that Columns hold the primary key, and prepares the INSERT to learn the
// columns' types.
func (w *writer) open(ctx context.Context, log *slog.Logger) error {
	cc, err := w.cfg.cluster(log)
	if err != nil {
		return err
	}
	if w.sess, err = cc.CreateSession(); err != nil {
		return err
	}
	if err := w.check(ctx); err != nil {
		w.close()
		return err
	}
	return nil
}

func (w *writer) check(ctx context.Context) error {
	c := w.cfg
	var ks string
	err := w.sess.Query("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?", c.Keyspace).
		WithContext(ctx).Scan(&ks)
	if errors.Is(err, gocql.ErrNotFound) {
		return &refusalError{fmt.Sprintf("keyspace %q does not exist", c.Keyspace), "check Keyspace (names are case-sensitive)"}
	} else if err != nil {
		return err
	}
	it := w.sess.Query("SELECT column_name, kind, position FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?",
		c.Keyspace, c.Table).WithContext(ctx).Iter()
	var name, kind string
	var pos int
	type keyCol struct {
		name, kind string
		pos        int
	}
	var keys []keyCol
	cols := map[string]bool{}
	for it.Scan(&name, &kind, &pos) {
		cols[name] = true
		if kind == "partition_key" || kind == "clustering" {
			keys = append(keys, keyCol{name, kind, pos})
		}
	}
	if err := it.Close(); err != nil {
		return err
	}
	if len(cols) == 0 {
		return &refusalError{fmt.Sprintf("table %s.%s does not exist", c.Keyspace, c.Table), "check Table (names are case-sensitive)"}
	}
	for i, col := range c.Columns {
		if !cols[col] {
			return &refusalError{fmt.Sprintf("table %s.%s has no column %q", c.Keyspace, c.Table, col), fmt.Sprintf("check Columns[%d]", i)}
		}
	}
	slices.SortFunc(keys, func(a, b keyCol) int {
		if a.kind != b.kind {
			return strings.Compare(b.kind, a.kind) // partition_key first
		}
		return a.pos - b.pos
	})
	w.part, w.key = nil, nil
	for _, k := range keys {
		i := slices.Index(c.Columns, k.name)
		if i < 0 {
			return &refusalError{fmt.Sprintf("primary key column %q of %s.%s is not in Columns", k.name, c.Keyspace, c.Table),
				"check Columns: they must include every primary key column"}
		}
		if k.kind == "partition_key" {
			w.part = append(w.part, i)
		}
		w.key = append(w.key, i)
	}
	// Prepare the INSERT without running it: the binding callback
	// receives the bind markers' types and stops the query.
	errProbe := errors.New("cassandra: types probed")
	err = w.sess.Bind(w.insert, func(q *gocql.QueryInfo) ([]any, error) {
		w.types = w.types[:0]
		for _, a := range q.Args {
			w.types = append(w.types, a.TypeInfo)
		}
		return nil, errProbe
	}).WithContext(ctx).Exec()
	if !errors.Is(err, errProbe) {
		if err == nil {
			err = errors.New("the INSERT ran instead of being prepared")
		}
		return err
	}
	if len(w.types) != len(c.Columns) {
		return fmt.Errorf("the prepared INSERT has %d bind markers for %d Columns", len(w.types), len(c.Columns))
	}
	return nil
}

// close closes the session; safe to call twice.
func (w *writer) close() {
	if w.sess != nil {
		w.sess.Close()
		w.sess = nil
	}
}

// keyOf returns the identity of r's columns idx (length-prefixed bytes).
func keyOf(r *row, idx []int) string {
	var b []byte
	for _, i := range idx {
		b = binary.AppendUvarint(b, uint64(len(r.cells[i].b)))
		b = append(b, r.cells[i].b...)
	}
	return string(b)
}

// unit is one request of a write: a statement, or an unlogged batch of
// rows of one partition.
type unit struct{ rows []int }

// write writes rows at write timestamp ts (µs): the rows of each
// partition in unlogged batches of at most BatchRows, the requests at
// most Concurrency at a time. It returns each row's error (nil: written).
func (w *writer) write(ctx context.Context, rows []*row, ts int64) []error {
	var units []unit
	byPart := map[string]int{} // partition → its open unit
	for i, r := range rows {
		p := keyOf(r, w.part)
		u, ok := byPart[p]
		if !ok || len(units[u].rows) >= w.cfg.BatchRows {
			u = len(units)
			units = append(units, unit{})
			byPart[p] = u
		}
		units[u].rows = append(units[u].rows, i)
	}
	errs := make([]error, len(rows))
	sem := make(chan struct{}, w.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, u := range units {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := w.send(ctx, rows, u, ts)
			for _, i := range u.rows {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	return errs
}

// send runs one unit.
func (w *writer) send(ctx context.Context, rows []*row, u unit, ts int64) error {
	args := func(r *row) []any {
		a := make([]any, len(r.cells))
		for i, c := range r.cells {
			a[i] = c.arg()
		}
		return a
	}
	if len(u.rows) == 1 {
		return w.sess.Query(w.insert, args(rows[u.rows[0]])...).WithContext(ctx).Consistency(w.cl).
			WithTimestamp(ts).Idempotent(true).Exec()
	}
	b := w.sess.NewBatch(gocql.UnloggedBatch).WithContext(ctx).WithTimestamp(ts)
	b.SetConsistency(w.cl)
	for _, i := range u.rows {
		b.Entries = append(b.Entries, gocql.BatchEntry{Stmt: w.insert, Args: args(rows[i]), Idempotent: true})
	}
	return w.sess.ExecuteBatch(b)
}
