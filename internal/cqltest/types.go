package cqltest

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// cqlType is a CQL data type: a native type or a collection of them.
type cqlType struct {
	name string     // "int", "text", "list", "set", "map", …
	args []*cqlType // element types of a collection
}

// Native type option ids (§4.2.5.2) and the fixed length of their values
// (0: any length).
var natives = map[string]struct {
	id  uint16
	len int
}{
	"ascii": {0x0001, 0}, "bigint": {0x0002, 8}, "blob": {0x0003, 0}, "boolean": {0x0004, 1},
	"counter": {0x0005, 8}, "decimal": {0x0006, 0}, "double": {0x0007, 8}, "float": {0x0008, 4},
	"int": {0x0009, 4}, "timestamp": {0x000B, 8}, "uuid": {0x000C, 16}, "text": {0x000D, 0},
	"varchar": {0x000D, 0}, "varint": {0x000E, 0}, "timeuuid": {0x000F, 16}, "inet": {0x0010, 0},
	"date": {0x0011, 4}, "time": {0x0012, 8}, "smallint": {0x0013, 2}, "tinyint": {0x0014, 1},
}

// parseType parses a CQL type as a schema declares it ("int",
// "list<text>", "map<text, bigint>", "frozen<set<int>>").
func parseType(s string) (*cqlType, error) {
	t, rest, err := parseTypeAt(strings.TrimSpace(s))
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(rest) != "" {
		return nil, fmt.Errorf("type %q: trailing %q", s, rest)
	}
	return t, nil
}

func parseTypeAt(s string) (*cqlType, string, error) {
	i := strings.IndexAny(s, "<>,")
	name := s
	rest := ""
	if i >= 0 {
		name, rest = s[:i], s[i:]
	}
	name = strings.ToLower(strings.TrimSpace(name))
	if _, ok := natives[name]; ok {
		return &cqlType{name: name}, rest, nil
	}
	want := map[string]int{"list": 1, "set": 1, "map": 2, "frozen": 1}[name]
	if want == 0 || !strings.HasPrefix(rest, "<") {
		return nil, "", fmt.Errorf("unknown type %q", name)
	}
	rest = rest[1:]
	t := &cqlType{name: name}
	for k := range want {
		if k > 0 {
			rest = strings.TrimSpace(rest)
			if !strings.HasPrefix(rest, ",") {
				return nil, "", fmt.Errorf("%s: want 2 element types", name)
			}
			rest = rest[1:]
		}
		a, r, err := parseTypeAt(strings.TrimSpace(rest))
		if err != nil {
			return nil, "", err
		}
		t.args, rest = append(t.args, a), strings.TrimSpace(r)
	}
	if !strings.HasPrefix(rest, ">") {
		return nil, "", fmt.Errorf("%s: missing >", name)
	}
	if name == "frozen" {
		return t.args[0], rest[1:], nil
	}
	return t, rest[1:], nil
}

// String is the type as CQL writes it.
func (t *cqlType) String() string {
	if len(t.args) == 0 {
		return t.name
	}
	parts := make([]string, len(t.args))
	for i, a := range t.args {
		parts[i] = a.String()
	}
	return t.name + "<" + strings.Join(parts, ", ") + ">"
}

// option writes t as an [option] (§4.2.5.2).
func (t *cqlType) option(w *writer) {
	switch t.name {
	case "list":
		w.short(0x0020)
	case "map":
		w.short(0x0021)
	case "set":
		w.short(0x0022)
	default:
		w.short(natives[t.name].id)
		return
	}
	for _, a := range t.args {
		a.option(w)
	}
}

// check reports a serialized value that is not one of t (§6), as
// Cassandra's "Invalid" answer says it.
func (t *cqlType) check(b []byte) error {
	if n := natives[t.name].len; len(t.args) == 0 {
		if n > 0 && len(b) != n && len(b) != 0 {
			return fmt.Errorf("Expected %d or 0 byte %s (%d)", n, t.name, len(b))
		}
		return nil
	}
	// A collection: [int n] then n elements (map: n key/value pairs), each
	// an [int length][bytes].
	if len(b) < 4 {
		return fmt.Errorf("not enough bytes to read a %s", t.name)
	}
	n := int(int32(binary.BigEndian.Uint32(b)))
	b = b[4:]
	per := 1
	if t.name == "map" {
		per = 2
	}
	for i := 0; i < n*per; i++ {
		if len(b) < 4 {
			return fmt.Errorf("not enough bytes to read a %s element", t.name)
		}
		l := int(int32(binary.BigEndian.Uint32(b)))
		b = b[4:]
		if l < 0 || l > len(b) {
			return fmt.Errorf("%s element of length %d", t.name, l)
		}
		if err := t.args[i%per].check(b[:l]); err != nil {
			return err
		}
		b = b[l:]
	}
	if len(b) != 0 {
		return fmt.Errorf("%d trailing bytes after a %s", len(b), t.name)
	}
	return nil
}

// Encoders of the system tables' values.

func textValue(s string) []byte { return []byte(s) }

func intValue(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }

func bigintValue(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

func inetValue(ip [4]byte) []byte { return ip[:] }

func setOfText(l ...string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(l)))
	for _, s := range l {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return b
}

func mapOfText(kv ...string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(kv)/2))
	for _, s := range kv {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return b
}
