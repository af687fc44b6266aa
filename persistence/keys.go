package persistence

import (
	"encoding/binary"
	"fmt"
)

const (
	spaceOperator byte = 0x01
	spaceNode     byte = 0x02

	// ClassState marks operator state keys.
	ClassState byte = 's'
	// ClassTimer marks processing-time timer keys.
	ClassTimer byte = 't'
	// ClassEventTimer marks event-time timer keys (a key space of their
	// own: the same key may name one timer of each kind).
	ClassEventTimer byte = 'e'
	// ClassMeta marks the runtime's own per-instance keys (such as the
	// instance's processed-records counter), which move with the key group.
	ClassMeta byte = 'm'
)

// operatorPrefix returns 0x01 | uvarint(len(op)) | op.
func operatorPrefix(op string) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(op))
	b = append(b, spaceOperator)
	b = binary.AppendUvarint(b, uint64(len(op)))
	return append(b, op...)
}

// appendGroup appends a two-byte big-endian key group.
func appendGroup(b []byte, kg int) []byte {
	return append(b, byte(kg>>8), byte(kg))
}

// groupBounds returns the key range [lo, hi) holding key groups [first, end)
// of the operator whose prefix is p.
func groupBounds(p []byte, first, end int) (lo, hi []byte) {
	lo = appendGroup(append([]byte(nil), p...), first)
	hi = appendGroup(append([]byte(nil), p...), end)
	return lo, hi
}

// operatorBounds returns the key range holding all of an operator's data.
func operatorBounds(p []byte) (lo, hi []byte) {
	lo = append([]byte(nil), p...)
	hi = append(append([]byte(nil), p...), 0xff, 0xff, 0xff)
	return lo, hi
}

// decodeGroupKey splits a full key of the operator with prefix p into key
// group, class and user key.
func decodeGroupKey(p, full []byte) (kg int, class byte, key []byte, err error) {
	if len(full) < len(p)+3 || string(full[:len(p)]) != string(p) {
		return 0, 0, nil, fmt.Errorf("persistence: key %q is not under operator prefix %q", full, p)
	}
	rest := full[len(p):]
	return int(rest[0])<<8 | int(rest[1]), rest[2], rest[3:], nil
}

// NodeKey returns the key under which node metadata name is stored.
func NodeKey(name string) []byte {
	return append([]byte{spaceNode}, name...)
}

// KeyGroupOf returns the key group of a full key of operator op (as found
// in KV values from ExportGroups or a state log), or -1 when the key is not
// op's.
func KeyGroupOf(op string, full []byte) int {
	kg, _, _, err := decodeGroupKey(operatorPrefix(op), full)
	if err != nil {
		return -1
	}
	return kg
}
