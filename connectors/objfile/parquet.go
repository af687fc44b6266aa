package objfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/sluicehq/sluice/sdk"
)

// Format is the layout of the files the sink writes.
type Format int

// Formats.
const (
	// FormatJSONLines writes each record's value and '\n' (".jsonl").
	FormatJSONLines Format = iota
	// FormatParquet writes Parquet files (".parquet", Snappy-compressed
	// pages): each record's value is a JSON object whose top-level fields
	// named by SinkConfig.Columns become the row's columns.
	FormatParquet
)

// String names f.
func (f Format) String() string {
	switch f {
	case FormatJSONLines:
		return "jsonl"
	case FormatParquet:
		return "parquet"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ext is the extension of f's final keys.
func (f Format) ext() string {
	if f == FormatParquet {
		return ".parquet"
	}
	return ".jsonl"
}

// ColumnType is the type of a Parquet column and the JSON it takes.
type ColumnType int

// Column types.
const (
	// ColumnString takes a JSON string (UTF-8 BYTE_ARRAY).
	ColumnString ColumnType = iota
	// ColumnInt64 takes a JSON number without a fraction (INT64).
	ColumnInt64
	// ColumnDouble takes a JSON number (DOUBLE).
	ColumnDouble
	// ColumnBool takes true or false (BOOLEAN).
	ColumnBool
	// ColumnTimestampMillis takes milliseconds since the Unix epoch as a
	// JSON number, or an RFC 3339 string (INT64 TIMESTAMP(MILLIS, UTC)).
	ColumnTimestampMillis
)

// String names t.
func (t ColumnType) String() string {
	switch t {
	case ColumnString:
		return "string"
	case ColumnInt64:
		return "int64"
	case ColumnDouble:
		return "double"
	case ColumnBool:
		return "bool"
	case ColumnTimestampMillis:
		return "timestamp-millis"
	}
	return fmt.Sprintf("ColumnType(%d)", int(t))
}

// Column is one column of a Parquet file: a top-level field of the
// records' JSON objects.
type Column struct {
	Name string
	Type ColumnType
	// Optional columns may be missing or null in a record; a record
	// without a required column is refused (dead-lettered).
	Optional bool
}

// node returns c's Parquet schema node.
func (c Column) node() parquet.Node {
	var n parquet.Node
	switch c.Type {
	case ColumnInt64:
		n = parquet.Int(64)
	case ColumnDouble:
		n = parquet.Leaf(parquet.DoubleType)
	case ColumnBool:
		n = parquet.Leaf(parquet.BooleanType)
	case ColumnTimestampMillis:
		n = parquet.Timestamp(parquet.Millisecond)
	default:
		n = parquet.String()
	}
	if c.Optional {
		n = parquet.Optional(n)
	}
	return n
}

// validateColumns reports columns a Parquet sink cannot write.
func validateColumns(cols []Column) error {
	if len(cols) == 0 {
		return fmt.Errorf("required for FormatParquet: at least one column")
	}
	seen := map[string]bool{}
	for i, c := range cols {
		switch {
		case c.Name == "":
			return fmt.Errorf("column %d: Name is required", i)
		case seen[c.Name]:
			return fmt.Errorf("column %q named twice", c.Name)
		case c.Type < ColumnString || c.Type > ColumnTimestampMillis:
			return fmt.Errorf("column %q: unknown Type %d", c.Name, int(c.Type))
		}
		seen[c.Name] = true
	}
	return nil
}

// rowSchema is a Parquet sink's schema and its columns by name.
type rowSchema struct {
	schema *parquet.Schema
	cols   []Column
}

// newRowSchema returns the schema of cols (validated).
func newRowSchema(cols []Column) *rowSchema {
	g := parquet.Group{}
	for _, c := range cols {
		g[c.Name] = c.node()
	}
	return &rowSchema{schema: parquet.NewSchema("record", g), cols: slices.Clone(cols)}
}

// row converts a record's JSON object into a row of s, or returns an
// error wrapping sdk.ErrBadRecord naming the column at fault.
func (s *rowSchema) row(value []byte) (parquet.Row, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(value, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%w: parquet: the value is not a JSON object", sdk.ErrBadRecord)
	}
	m := make(map[string]any, len(s.cols))
	for _, c := range s.cols {
		raw, ok := obj[c.Name]
		if !ok || string(raw) == "null" {
			if !c.Optional {
				return nil, fmt.Errorf("%w: parquet: column %q is required and the record has none", sdk.ErrBadRecord, c.Name)
			}
			m[c.Name] = nil
			continue
		}
		v, err := columnValue(c.Type, raw)
		if err != nil {
			return nil, fmt.Errorf("%w: parquet: column %q: %v", sdk.ErrBadRecord, c.Name, err)
		}
		m[c.Name] = v
	}
	return s.schema.Deconstruct(nil, m), nil
}

// columnValue decodes raw as a value of a column of type t.
func columnValue(t ColumnType, raw json.RawMessage) (any, error) {
	switch t {
	case ColumnString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("want a string, got %.40s", raw)
		}
		return s, nil
	case ColumnBool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("want true or false, got %.40s", raw)
		}
		return b, nil
	case ColumnDouble:
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("want a number, got %.40s", raw)
		}
		return f, nil
	case ColumnTimestampMillis:
		var s string
		if json.Unmarshal(raw, &s) == nil {
			ts, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return nil, fmt.Errorf("want milliseconds or an RFC 3339 time: %v", err)
			}
			return ts.UnixMilli(), nil
		}
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("want an integer, got %.40s", raw)
	}
	return n, nil
}

// parquetFile is the Parquet writer of one file being filled.
type parquetFile struct {
	w *parquet.Writer
}

// newParquetFile starts a Parquet file of s writing into buf.
func newParquetFile(s *rowSchema, buf io.Writer) *parquetFile {
	return &parquetFile{w: parquet.NewWriter(buf, s.schema, parquet.Compression(&parquet.Snappy))}
}

// write appends row.
func (p *parquetFile) write(row parquet.Row) error {
	if _, err := p.w.WriteRows([]parquet.Row{row}); err != nil {
		return fmt.Errorf("parquet: write a row: %w", err)
	}
	return nil
}

// close writes the file's last row group and footer.
func (p *parquetFile) close() error {
	if err := p.w.Close(); err != nil {
		return fmt.Errorf("parquet: close the file: %w", err)
	}
	return nil
}

// parquetRecords returns the rows of a Parquet file as records, each
// value the row as a JSON object (null for a missing optional column;
// timestamps as milliseconds).
func parquetRecords(data []byte) ([]sdk.Record, error) {
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("open the parquet file: %w", err)
	}
	schema := f.Schema()
	r := parquet.NewReader(f, schema)
	defer r.Close()
	recs := make([]sdk.Record, 0, f.NumRows())
	rows := make([]parquet.Row, 64)
	for {
		n, err := r.ReadRows(rows)
		for _, row := range rows[:n] {
			m := map[string]any{}
			if err := schema.Reconstruct(&m, row); err != nil {
				return nil, fmt.Errorf("read a parquet row: %w", err)
			}
			b, err := json.Marshal(m)
			if err != nil {
				return nil, fmt.Errorf("encode a parquet row as JSON: %w", err)
			}
			recs = append(recs, sdk.Record{Value: b})
		}
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read the parquet rows: %w", err)
		}
	}
}
