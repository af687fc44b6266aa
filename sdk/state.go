package sdk

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Int64Bytes encodes n as 8 big-endian bytes.
func Int64Bytes(n int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(n))
}

// BytesInt64 decodes 8 big-endian bytes written by Int64Bytes.
func BytesInt64(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("sdk: int64 value has %d bytes, want 8", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// GetInt64 reads an int64 written by PutInt64; a missing key reads as 0.
func GetInt64(s State, key []byte) (int64, error) {
	v, err := s.Get(key)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return BytesInt64(v)
}

// ScanAllGroups calls fn for every key with the given prefix in every key
// group the instance owns (State.Scan sees only the current one), in order
// of key group, then key: for bookkeeping read once in Init, such as a
// connector's positions after a rescale merged key groups. A State that is
// not the runtime's (a test double) is scanned with Scan.
func ScanAllGroups(s State, prefix []byte, fn func(key, value []byte) error) error {
	if a, ok := s.(AllGroupsScanner); ok {
		return a.ScanAllGroups(prefix, fn)
	}
	return s.Scan(prefix, fn)
}

// PutInt64 stores n under key.
func PutInt64(s State, key []byte, n int64) {
	if o, ok := s.(OwnedSetter); ok {
		o.SetOwned(key, Int64Bytes(n)) // one allocation, the value kept
		return
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n))
	s.Set(key, b[:])
}
