package cqltest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Kinds of column (system_schema.columns' kind).
const (
	PartitionKey = "partition_key"
	Clustering   = "clustering"
	Regular      = "regular"
)

// Column is a column of a Table.
type Column struct {
	// Name is the column's name; Type its CQL type ("text", "bigint",
	// "list<int>", "map<text, int>", "counter", …).
	Name, Type string
	// Kind is PartitionKey, Clustering or Regular ("" is Regular).
	Kind string
}

// Table is a table the server holds: Keyspace.Name with Columns, whose
// PartitionKey and Clustering columns (in the order given) make the
// primary key.
type Table struct {
	Keyspace, Name string
	Columns        []Column
}

// column is a Column with its parsed type and its position in its kind.
type column struct {
	Column
	typ      *cqlType
	position int
}

// cell is one column's value in a row and the timestamp of the write that
// set it (last write wins, as in Cassandra).
type cell struct {
	b   []byte
	ts  int64
	set bool
}

// table is a Table's schema and rows.
type table struct {
	ks, name string
	cols     []column
	idx      map[string]int
	pk, ck   []int // partition key, clustering columns (indices into cols)
	counter  bool  // has a counter column: INSERT is refused, as by Cassandra
	rows     map[string][]cell
}

func newTable(t Table) (*table, error) {
	tb := &table{ks: t.Keyspace, name: t.Name, idx: map[string]int{}, rows: map[string][]cell{}}
	if t.Keyspace == "" || t.Name == "" {
		return nil, fmt.Errorf("table %q.%q: keyspace and name are required", t.Keyspace, t.Name)
	}
	for i, c := range t.Columns {
		typ, err := parseType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("table %s.%s: column %s: %w", t.Keyspace, t.Name, c.Name, err)
		}
		if c.Kind == "" {
			c.Kind = Regular
		}
		col := column{Column: c, typ: typ, position: -1}
		switch c.Kind {
		case PartitionKey:
			col.position = len(tb.pk)
			tb.pk = append(tb.pk, i)
		case Clustering:
			col.position = len(tb.ck)
			tb.ck = append(tb.ck, i)
		case Regular:
		default:
			return nil, fmt.Errorf("table %s.%s: column %s: kind %q", t.Keyspace, t.Name, c.Name, c.Kind)
		}
		tb.counter = tb.counter || typ.name == "counter"
		tb.idx[strings.ToLower(c.Name)] = i
		tb.cols = append(tb.cols, col)
	}
	if len(tb.pk) == 0 {
		return nil, fmt.Errorf("table %s.%s: no partition key column", t.Keyspace, t.Name)
	}
	return tb, nil
}

// columns resolves names to column indices (nil: all of them).
func (tb *table) columns(names []string) ([]int, *cqlError) {
	if names == nil {
		out := make([]int, len(tb.cols))
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	out := make([]int, len(names))
	for i, n := range names {
		j, ok := tb.idx[n]
		if !ok {
			return nil, errorf(codeInvalid, "Undefined column name %s", n)
		}
		out[i] = j
	}
	return out, nil
}

// key is the primary key of a row whose values are vals (by column).
func (tb *table) key(vals map[int][]byte) string {
	var b []byte
	for _, i := range append(slices.Clone(tb.pk), tb.ck...) {
		b = binary.AppendUvarint(b, uint64(len(vals[i])))
		b = append(b, vals[i]...)
	}
	return string(b)
}

// checkInsert validates an INSERT of vals into columns cols as Cassandra
// does, returning its Invalid error.
func (tb *table) checkInsert(cols []int, vals []value) *cqlError {
	if tb.counter {
		return errorf(codeInvalid, "INSERT statements are not allowed on counter tables, use UPDATE instead")
	}
	given := map[int]value{}
	for k, i := range cols {
		if _, dup := given[i]; dup {
			return errorf(codeInvalid, "Multiple definitions found for column %s", tb.cols[i].Name)
		}
		given[i] = vals[k]
	}
	for _, i := range append(slices.Clone(tb.pk), tb.ck...) {
		v, ok := given[i]
		switch {
		case !ok || v.unset:
			return errorf(codeInvalid, "Some primary key parts are missing: %s", tb.cols[i].Name)
		case v.null:
			return errorf(codeInvalid, "Invalid null value in condition for column %s", tb.cols[i].Name)
		}
	}
	if len(tb.pk) == 1 && len(given[tb.pk[0]].b) == 0 {
		return errorf(codeInvalid, "Key may not be empty")
	}
	for k, i := range cols {
		if v := vals[k]; !v.null && !v.unset {
			if err := tb.cols[i].typ.check(v.b); err != nil {
				return errorf(codeInvalid, "Invalid value for column %s: %v", tb.cols[i].Name, err)
			}
		}
	}
	return nil
}

// insert applies a checked INSERT written at timestamp ts (µs): each
// cell takes the value unless it holds a later write's.
func (tb *table) insert(cols []int, vals []value, ts int64) {
	byCol := map[int][]byte{}
	for k, i := range cols {
		byCol[i] = vals[k].b
	}
	key := tb.key(byCol)
	row, ok := tb.rows[key]
	if !ok {
		row = make([]cell, len(tb.cols))
		tb.rows[key] = row
	}
	for k, i := range cols {
		v := vals[k]
		if v.unset || (row[i].set && row[i].ts > ts) {
			continue
		}
		row[i] = cell{b: bytes.Clone(v.b), ts: ts, set: true}
		if v.null {
			row[i].b = nil
		}
	}
}

// literal encodes a WHERE literal for column i.
func (tb *table) literal(i int, c cond) ([]byte, *cqlError) {
	switch t := tb.cols[i].typ.name; {
	case c.quoted && (t == "text" || t == "varchar" || t == "ascii"):
		return []byte(c.literal), nil
	case !c.quoted && (t == "int" || t == "bigint"):
		n, err := strconv.ParseInt(c.literal, 10, 64)
		if err != nil {
			return nil, errorf(codeInvalid, "Invalid %s constant (%s) for %q", t, c.literal, tb.cols[i].Name)
		}
		if t == "int" {
			return intValue(int32(n)), nil
		}
		return bigintValue(n), nil
	}
	return nil, errorf(codeInvalid, "Invalid constant %q for column %s of type %s", c.literal, tb.cols[i].Name, tb.cols[i].typ)
}

// match returns the rows (in primary key order) whose columns equal the
// conditions' values.
func (tb *table) match(where []cond, binds []value) ([][]cell, *cqlError) {
	type want struct {
		i int
		b []byte
	}
	var wants []want
	for _, c := range where {
		i, ok := tb.idx[c.col]
		if !ok {
			return nil, errorf(codeInvalid, "Undefined column name %s", c.col)
		}
		var b []byte
		if c.bind >= 0 {
			if c.bind >= len(binds) {
				return nil, errorf(codeInvalid, "There were %d markers(?) in CQL but %d bound variables", c.bind+1, len(binds))
			}
			b = binds[c.bind].b
		} else {
			var err *cqlError
			if b, err = tb.literal(i, c); err != nil {
				return nil, err
			}
		}
		wants = append(wants, want{i, b})
	}
	keys := make([]string, 0, len(tb.rows))
	for k := range tb.rows {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out [][]cell
rows:
	for _, k := range keys {
		row := tb.rows[k]
		for _, w := range wants {
			if !bytes.Equal(row[w.i].b, w.b) {
				continue rows
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// spec writes the result or bind metadata of columns cols (§4.2.5.2):
// flags, count, [pk indexes], global table spec, column specs.
func (tb *table) spec(w *writer, names []string, types []*cqlType, pkIndexes []int, prepared, skip bool) {
	flags := int32(0x0001)
	if skip {
		flags = 0x0004
	}
	w.int(flags)
	w.int(int32(len(names)))
	if prepared {
		w.int(int32(len(pkIndexes)))
		for _, i := range pkIndexes {
			w.short(uint16(i))
		}
	}
	if skip {
		return
	}
	w.string(tb.ks)
	w.string(tb.name)
	for i, n := range names {
		w.string(n)
		types[i].option(w)
	}
}
