package cassandra

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/sluicehq/sluice/sdk"
)

// jsonMapper is the mapping of SinkConfig.Map nil (the JSON mode): the
// record's value is a JSON object; each column takes the field of its
// name, converted for the column's type (see the package documentation).
// A missing field leaves the column unset (as it is), null writes a null.
type jsonMapper struct {
	cols  []string
	types []gocql.TypeInfo
}

func (m jsonMapper) mapRecord(rec sdk.Record) ([]any, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(rec.Value, &obj); err != nil {
		return nil, fmt.Errorf("value is not a JSON object: %w", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("value is not a JSON object: null")
	}
	vals := make([]any, len(m.cols))
	for i, c := range m.cols {
		raw, ok := obj[c]
		switch {
		case !ok:
			vals[i] = gocql.UnsetValue
		case string(raw) == "null":
			vals[i] = nil
		default:
			v, err := jsonValue(raw, m.types[i])
			if err != nil {
				return nil, fmt.Errorf("field %q (%s): %w", c, m.types[i], err)
			}
			vals[i] = v
		}
	}
	return vals, nil
}

// jsonValue converts one JSON value for a column of type t into what
// gocql marshals into it.
func jsonValue(raw json.RawMessage, t gocql.TypeInfo) (any, error) {
	str := func() (string, error) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("want a string")
		}
		return s, nil
	}
	switch t.Type() {
	case gocql.TypeVarchar, gocql.TypeText, gocql.TypeAscii:
		if len(raw) > 0 && raw[0] == '"' {
			return str()
		}
		return string(raw), nil // another value's JSON text
	case gocql.TypeBlob:
		s, err := str()
		if err != nil {
			return nil, fmt.Errorf("want a base64 string")
		}
		return base64.StdEncoding.DecodeString(s)
	case gocql.TypeBoolean:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("want true or false")
		}
		return b, nil
	case gocql.TypeTinyInt, gocql.TypeSmallInt, gocql.TypeInt, gocql.TypeBigInt, gocql.TypeCounter:
		return strconv.ParseInt(string(raw), 10, 64)
	case gocql.TypeVarint:
		n, ok := new(big.Int).SetString(string(raw), 10)
		if !ok {
			return nil, fmt.Errorf("want an integer")
		}
		return n, nil
	case gocql.TypeFloat:
		f, err := strconv.ParseFloat(string(raw), 32)
		return float32(f), err
	case gocql.TypeDouble:
		return strconv.ParseFloat(string(raw), 64)
	case gocql.TypeDecimal:
		return decimal(string(raw))
	case gocql.TypeTimestamp:
		if s, err := str(); err == nil {
			return time.Parse(time.RFC3339Nano, s)
		}
		return strconv.ParseInt(string(raw), 10, 64) // milliseconds since the epoch
	case gocql.TypeDate:
		s, err := str()
		if err != nil {
			return nil, fmt.Errorf("want a date string, 2006-01-02")
		}
		return time.Parse(time.DateOnly, s)
	case gocql.TypeTime:
		return strconv.ParseInt(string(raw), 10, 64) // nanoseconds since midnight
	case gocql.TypeUUID, gocql.TypeTimeUUID:
		s, err := str()
		if err != nil {
			return nil, err
		}
		return gocql.ParseUUID(s)
	case gocql.TypeInet:
		s, err := str()
		ip := net.ParseIP(s)
		if err != nil || ip == nil {
			return nil, fmt.Errorf("want an IP address string")
		}
		return ip, nil
	case gocql.TypeList, gocql.TypeSet:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, fmt.Errorf("want an array")
		}
		elem := t.(gocql.CollectionType).Elem
		out := make([]any, len(items))
		for i, it := range items {
			v, err := jsonValue(it, elem)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = v
		}
		return out, nil
	case gocql.TypeMap:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("want an object")
		}
		ct := t.(gocql.CollectionType)
		out := make(map[any]any, len(obj))
		for k, item := range obj {
			kraw, _ := json.Marshal(k) // a key of a string type, or of a type written as a string
			if json.Valid([]byte(k)) && !strings.HasPrefix(k, `"`) {
				kraw = []byte(k) // a number or a boolean
			}
			kv, err := jsonValue(kraw, ct.Key)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			v, err := jsonValue(item, ct.Elem)
			if err != nil {
				return nil, fmt.Errorf("[%q]: %w", k, err)
			}
			out[kv] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("the JSON mode does not write type %s; give SinkConfig.Map", t)
}

// decimal marshals a JSON number as a CQL decimal: the scale (int32) and
// the unscaled value (a two's-complement varint).
func decimal(s string) (raw, error) {
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	e := 0
	if exp != "" {
		n, err := strconv.Atoi(exp)
		if err != nil {
			return nil, fmt.Errorf("want a number")
		}
		e = n
	}
	whole, frac, _ := strings.Cut(mant, ".")
	n, ok := new(big.Int).SetString(whole+frac, 10)
	if !ok {
		return nil, fmt.Errorf("want a number")
	}
	scale := len(frac) - e
	b := binary.BigEndian.AppendUint32(nil, uint32(int32(scale)))
	return append(b, varint(n)...), nil
}

// varint is n in two's complement, big-endian, in the fewest bytes.
func varint(n *big.Int) []byte {
	if n.Sign() >= 0 {
		b := n.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -n-1 in one's complement is n in two's complement.
	m := new(big.Int).Not(n)
	b := m.Bytes()
	for i := range b {
		b[i] = ^b[i]
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		b = append([]byte{0xff}, b...)
	}
	return bytes.Clone(b)
}

// marshalRow marshals vals (Map's or the JSON mode's) into a row for
// types; the error names the column.
func marshalRow(cols []string, types []gocql.TypeInfo, vals []any) (*row, error) {
	if len(vals) != len(cols) {
		return nil, fmt.Errorf("Map returned %d values for %d Columns", len(vals), len(cols))
	}
	r := &row{cells: make([]cell, len(vals))}
	for i, v := range vals {
		switch v := v.(type) {
		case nil:
			r.cells[i].null = true
			continue
		case raw:
			r.cells[i].b = v
			r.size += len(v)
			continue
		}
		if v == gocql.UnsetValue {
			r.cells[i].unset = true
			continue
		}
		b, err := gocql.Marshal(types[i], v)
		if err != nil {
			return nil, fmt.Errorf("column %q (%s): %w", cols[i], types[i], err)
		}
		r.cells[i] = cell{b: b, null: b == nil}
		r.size += len(b)
	}
	return r, nil
}
