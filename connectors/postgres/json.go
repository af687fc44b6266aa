package postgres

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sluicehq/sluice/sdk"
)

// jsonMapper is the mapping of SinkConfig.Map nil (the JSON mode): the record's value is a
// JSON object; each column takes the field of its name (null or missing:
// NULL), converted for the column's type: numbers for integer and
// floating-point columns (numeric takes the number's text), true/false for
// boolean, RFC 3339 strings for timestamp, timestamptz and date, the JSON
// text for json and jsonb, and for text and any other type a string's
// contents or another value's JSON text.
type jsonMapper struct {
	cols []string
	oids []uint32
}

func (m jsonMapper) mapRecord(rec sdk.Record) ([]any, error) {
	var obj map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(rec.Value))
	if err := d.Decode(&obj); err != nil {
		return nil, fmt.Errorf("value is not a JSON object: %w", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("value is not a JSON object: null")
	}
	vals := make([]any, len(m.cols))
	for i, c := range m.cols {
		raw, ok := obj[c]
		if !ok || string(raw) == "null" {
			continue
		}
		v, err := jsonValue(raw, m.oids[i])
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", c, err)
		}
		vals[i] = v
	}
	return vals, nil
}

// jsonValue converts one JSON value for a column of type oid.
func jsonValue(raw json.RawMessage, oid uint32) (any, error) {
	switch oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
		return strconv.ParseInt(string(raw), 10, 64)
	case pgtype.Float4OID, pgtype.Float8OID:
		return strconv.ParseFloat(string(raw), 64)
	case pgtype.NumericOID:
		var n pgtype.Numeric
		if err := n.Scan(string(raw)); err != nil {
			return nil, err
		}
		return n, nil
	case pgtype.BoolOID:
		var b bool
		err := json.Unmarshal(raw, &b)
		return b, err
	case pgtype.JSONOID, pgtype.JSONBOID:
		return string(raw), nil
	case pgtype.TimestampOID, pgtype.TimestamptzOID, pgtype.DateOID:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("want an RFC 3339 string: %w", err)
		}
		if oid == pgtype.DateOID {
			return time.Parse(time.DateOnly, s)
		}
		return time.Parse(time.RFC3339Nano, s)
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	return string(raw), nil
}
