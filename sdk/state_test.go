package sdk_test

import (
	"testing"

	"github.com/sluicehq/sluice/sdk"
)

// mapState is a State test double; with owned set it is also an
// OwnedSetter and records which method stored each key.
type mapState struct {
	m   map[string][]byte
	how map[string]string
}

func (s *mapState) Get(key []byte) ([]byte, error) {
	if v, ok := s.m[string(key)]; ok {
		return v, nil
	}
	return nil, sdk.ErrNotFound
}
func (s *mapState) Set(key, value []byte) {
	s.m[string(key)] = append([]byte(nil), value...)
	s.how[string(key)] = "Set"
}
func (s *mapState) Delete(key []byte)                                    { delete(s.m, string(key)) }
func (s *mapState) Scan(prefix []byte, fn func(k, v []byte) error) error { return nil }

type ownedState struct{ *mapState }

func (s ownedState) SetOwned(key, value []byte) {
	s.m[string(key)] = value
	s.how[string(key)] = "SetOwned"
}

// TestPutInt64UsesSetOwned: PutInt64 hands its value to a State that keeps
// it (the runtime's) rather than having it copied, and to any other State
// through Set; GetInt64 reads it back either way.
func TestPutInt64UsesSetOwned(t *testing.T) {
	plain := &mapState{m: map[string][]byte{}, how: map[string]string{}}
	owned := ownedState{&mapState{m: map[string][]byte{}, how: map[string]string{}}}
	for _, tc := range []struct {
		st   sdk.State
		how  map[string]string
		want string
	}{{plain, plain.how, "Set"}, {owned, owned.how, "SetOwned"}} {
		sdk.PutInt64(tc.st, []byte("n"), -42)
		if tc.how["n"] != tc.want {
			t.Errorf("PutInt64 on a %T stored with %q, want %q", tc.st, tc.how["n"], tc.want)
		}
		if n, err := sdk.GetInt64(tc.st, []byte("n")); err != nil || n != -42 {
			t.Errorf("GetInt64 on a %T = %d, %v; want -42", tc.st, n, err)
		}
	}
}
