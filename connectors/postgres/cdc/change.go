package cdc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/sluicehq/sluice/sdk"
)

// Op is the kind of a row change.
type Op string

// The row changes.
const (
	Insert Op = "insert"
	Update Op = "update"
	Delete Op = "delete"
)

// Change is the value of a record, as JSON: one row change.
//
//	{"table":"public.orders","op":"update","lsn":"0/1A2B3C8","xid":771,
//	 "commit_time":"2026-12-07T13:30:00.123456Z",
//	 "columns":{"id":7,"status":"paid","total":"12.50"},"old_key":{"id":7}}
//
// Columns holds the new row (insert, update), or the old row of a delete
// from a table with REPLICA IDENTITY FULL; a delete of another table has
// only OldKey. OldKey is the replica identity's columns (the primary key
// by default) before an update or delete. Values: integers, floats and
// numerics are JSON numbers (NaN and infinities strings), booleans JSON
// booleans, json and jsonb their JSON, NULL null, every other type the
// text PostgreSQL writes for it (timestamps, dates, uuids, arrays...). A
// TOASTed column an update did not change is not sent by the server: it
// is missing from Columns and listed in Unchanged.
type Change struct {
	Table      string                     `json:"table"`
	Op         Op                         `json:"op"`
	LSN        string                     `json:"lsn"`
	Xid        uint32                     `json:"xid"`
	CommitTime time.Time                  `json:"commit_time"`
	Columns    map[string]json.RawMessage `json:"columns,omitempty"`
	OldKey     map[string]json.RawMessage `json:"old_key,omitempty"`
	Unchanged  []string                   `json:"unchanged,omitempty"`
}

// Header names the source adds to every record.
const (
	// HeaderTable is the change's "schema.table".
	HeaderTable = "pg-table"
	// HeaderOp is the change's Op.
	HeaderOp = "pg-op"
	// HeaderLSN is the end LSN of the change's transaction, as
	// PostgreSQL writes LSNs ("0/1A2B3C8").
	HeaderLSN = "pg-lsn"
)

// relation is what a Relation message told of a table.
type relation struct {
	table string
	cols  []*pglogrepl.RelationMessageColumn
	key   []int // the replica identity's columns
}

func newRelation(m *pglogrepl.RelationMessage) *relation {
	r := &relation{table: m.Namespace + "." + m.RelationName, cols: m.Columns}
	for i, c := range m.Columns {
		if c.Flags&1 != 0 {
			r.key = append(r.key, i)
		}
	}
	return r
}

// txn is a transaction being received: its changes, produced at its
// commit.
type txn struct {
	xid        uint32
	commitTime time.Time
	changes    []change
}

// change is one row change before its transaction's commit.
type change struct {
	rel           *relation
	op            Op
	tuple, oldKey *pglogrepl.TupleData // either may be nil
	full          bool                 // oldKey is the whole old row (REPLICA IDENTITY FULL)
}

// record turns c into the source's record, for a transaction that ends
// at end and committed at commit.
func (c change) record(xid uint32, end pglogrepl.LSN, commit time.Time) (sdk.Record, error) {
	v := Change{Table: c.rel.table, Op: c.op, LSN: end.String(), Xid: xid, CommitTime: commit.UTC()}
	var keySrc *pglogrepl.TupleData
	switch c.op {
	case Insert:
		v.Columns, v.Unchanged = c.rel.values(c.tuple, nil)
		keySrc = c.tuple
	case Update:
		v.Columns, v.Unchanged = c.rel.values(c.tuple, nil)
		keySrc = c.tuple
		old := c.tuple // the key did not change: the server sends no old key
		if c.oldKey != nil {
			old = c.oldKey
		}
		v.OldKey, _ = c.rel.values(old, c.rel.key)
	case Delete:
		if c.full {
			v.Columns, v.Unchanged = c.rel.values(c.oldKey, nil)
		}
		v.OldKey, _ = c.rel.values(c.oldKey, c.rel.key)
		keySrc = c.oldKey
	}
	b, err := json.Marshal(v)
	if err != nil {
		return sdk.Record{}, fmt.Errorf("encode a change of %s: %w", c.rel.table, err)
	}
	return sdk.Record{Key: c.rel.keyOf(keySrc), Value: b, EventTime: commit,
		Headers: []sdk.Header{{Key: HeaderTable, Value: c.rel.table}, {Key: HeaderOp, Value: string(c.op)}, {Key: HeaderLSN, Value: end.String()}}}, nil
}

// values returns the columns of t (only those at the indexes only, when
// set) as JSON, and the TOASTed columns the server did not send.
func (r *relation) values(t *pglogrepl.TupleData, only []int) (map[string]json.RawMessage, []string) {
	if t == nil {
		return nil, nil
	}
	out := map[string]json.RawMessage{}
	var unchanged []string
	add := func(i int) {
		if i >= len(t.Columns) || i >= len(r.cols) {
			return
		}
		col, meta := t.Columns[i], r.cols[i]
		switch col.DataType {
		case pglogrepl.TupleDataTypeNull:
			out[meta.Name] = json.RawMessage("null")
		case pglogrepl.TupleDataTypeToast:
			unchanged = append(unchanged, meta.Name)
		default:
			out[meta.Name] = jsonValue(meta.DataType, col.Data)
		}
	}
	if only != nil {
		for _, i := range only {
			add(i)
		}
	} else {
		for i := range r.cols {
			add(i)
		}
	}
	return out, unchanged
}

// keyOf returns the record key of a row: the text of its one replica
// identity column, or the JSON array of the texts of several; empty for a
// table without a replica identity.
func (r *relation) keyOf(t *pglogrepl.TupleData) []byte {
	if t == nil || len(r.key) == 0 {
		return nil
	}
	text := func(i int) []byte {
		if i < len(t.Columns) && t.Columns[i].DataType == pglogrepl.TupleDataTypeText {
			return t.Columns[i].Data
		}
		return nil
	}
	if len(r.key) == 1 {
		return bytes.Clone(text(r.key[0]))
	}
	parts := make([]string, len(r.key))
	for j, i := range r.key {
		parts[j] = string(text(i))
	}
	b, _ := json.Marshal(parts) // strings always encode
	return b
}

// Type OIDs whose text form is already JSON.
const (
	oidBool    = 16
	oidInt8    = 20
	oidInt2    = 21
	oidInt4    = 23
	oidOID     = 26
	oidJSON    = 114
	oidFloat4  = 700
	oidFloat8  = 701
	oidNumeric = 1700
	oidJSONB   = 3802
)

// jsonValue returns the JSON of a column's text value of type oid.
func jsonValue(oid uint32, text []byte) json.RawMessage {
	switch oid {
	case oidBool:
		if string(text) == "t" {
			return json.RawMessage("true")
		}
		return json.RawMessage("false")
	case oidInt2, oidInt4, oidInt8, oidOID, oidFloat4, oidFloat8, oidNumeric:
		if _, err := strconv.ParseFloat(string(text), 64); err == nil && json.Valid(text) {
			return json.RawMessage(bytes.Clone(text))
		}
	case oidJSON, oidJSONB:
		if json.Valid(text) {
			return json.RawMessage(bytes.Clone(text))
		}
	}
	b, _ := json.Marshal(string(text)) // a string always encodes
	return b
}
