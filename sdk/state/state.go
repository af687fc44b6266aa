package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
)

// Key layout, under the operator's State (so per key group):
//
//	0x00 | uvarint(len name) | name | 'v'                     Value
//	0x00 | uvarint(len name) | name | 'm' | key codec's bytes  Map entry
//	0x00 | uvarint(len name) | name | 'l' | 'e' | 8 bytes BE   List element
//	0x00 | uvarint(len name) | name | 'l' | 'n'                List's next index
//
// The length prefix makes the namespaces of two different names disjoint
// (neither is a prefix of the other), and the kind byte those of a Value,
// a Map and a List of the same name.
const (
	typedTag  = 0x00
	kindValue = 'v'
	kindMap   = 'm'
	kindList  = 'l'
	listElem  = 'e'
	listNext  = 'n'
)

// namespace returns the key prefix of the state of kind named name.
func namespace(kind byte, name string) []byte {
	b := make([]byte, 0, 2+binary.MaxVarintLen64+len(name))
	b = append(b, typedTag)
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	return append(b, kind)
}

// withSuffix returns a new slice holding prefix then n more bytes of
// capacity: a key under prefix, never sharing the (shared) prefix's array.
func withSuffix(prefix []byte, n int) []byte {
	return append(make([]byte, 0, len(prefix)+n), prefix...)
}

// describe names a state in errors: `map "clicks"`.
func describe(kind byte, name string) string {
	switch kind {
	case kindValue:
		return fmt.Sprintf("value %q", name)
	case kindMap:
		return fmt.Sprintf("map %q", name)
	default:
		return fmt.Sprintf("list %q", name)
	}
}

// decode decodes b with c, wrapping a failure (a *codec.DecodeError for
// this package's codecs) with the state and what was decoded.
func decode[T any](state, what string, c codec.Codec[T], b []byte) (T, error) {
	v, err := c.Decode(b)
	if err != nil {
		return v, fmt.Errorf("state: %s: decode %s: %w", state, what, err)
	}
	return v, nil
}

// get reads key and decodes its value with c: false, and no error, when
// the key is absent.
func get[T any](s sdk.State, state string, key []byte, c codec.Codec[T]) (T, bool, error) {
	var zero T
	b, err := s.Get(key)
	if errors.Is(err, sdk.ErrNotFound) {
		return zero, false, nil
	}
	if err != nil {
		return zero, false, fmt.Errorf("state: %s: get: %w", state, err)
	}
	v, err := decode(state, "value", c, b)
	if err != nil {
		return zero, false, err
	}
	return v, true, nil
}

// set encodes v with c and stores it under key, handing the fresh value
// to a State that keeps it (the runtime's) without a copy.
func set[T any](s sdk.State, state string, key []byte, c codec.Codec[T], v T) error {
	b, err := c.Encode(nil, v)
	if err != nil {
		return fmt.Errorf("state: %s: encode value: %w", state, err)
	}
	if o, ok := s.(sdk.OwnedSetter); ok {
		o.SetOwned(key, b)
		return nil
	}
	s.Set(key, b)
	return nil
}

// deleteAll deletes every key under prefix. It scans first and deletes
// after, since a State need not allow writes during its Scan.
func deleteAll(s sdk.State, state string, prefix []byte) error {
	var keys [][]byte
	err := s.Scan(prefix, func(k, _ []byte) error {
		keys = append(keys, append([]byte(nil), k...)) // k is valid during the call only
		return nil
	})
	if err != nil {
		return fmt.Errorf("state: %s: clear: %w", state, err)
	}
	for _, k := range keys {
		s.Delete(k)
	}
	return nil
}

// Value is one typed value under a name: a counter, a position, the last
// record seen.
type Value[V any] struct {
	name  string // for errors: `value "total"`
	key   []byte
	codec codec.Codec[V]
}

// NewValue returns the Value called name, encoded with c. Values with the
// same name and codec in one operator are the same state.
func NewValue[V any](name string, c codec.Codec[V]) Value[V] {
	return Value[V]{name: describe(kindValue, name), key: namespace(kindValue, name), codec: c}
}

// Get returns the value, and false (with V's zero value) if none is set.
// The error is the State's, or a decode error wrapping a
// *codec.DecodeError.
func (v Value[V]) Get(s sdk.State) (V, bool, error) { return get(s, v.name, v.key, v.codec) }

// Set stores x; the error is the codec's.
func (v Value[V]) Set(s sdk.State, x V) error { return set(s, v.name, v.key, v.codec, x) }

// Clear removes the value.
func (v Value[V]) Clear(s sdk.State) { s.Delete(v.key) }

// Map is a typed map under a name: one State entry per key, so Get, Put
// and Delete cost one State operation each whatever the map's size.
type Map[K, V any] struct {
	name   string // for errors: `map "clicks"`
	prefix []byte
	keys   codec.Codec[K]
	values codec.Codec[V]
}

// NewMap returns the Map called name, its keys encoded with keys and its
// values with values. Scan returns entries in the order of the keys'
// bytes: with codec.Int64, Uint64, Float64 or String that is the keys'
// order.
func NewMap[K, V any](name string, keys codec.Codec[K], values codec.Codec[V]) Map[K, V] {
	return Map[K, V]{name: describe(kindMap, name), prefix: namespace(kindMap, name), keys: keys, values: values}
}

// key returns the State key of k.
//
// The key is built in buf, a buffer of keyBufs that the caller gives back
// with putKey once the State call is done: a State keeps no key it is
// handed (Set keeps a copy), so the buffer is reused and a Get or Put
// costs no allocation for its key.
func (m Map[K, V]) key(k K) (key []byte, buf *[]byte, err error) {
	buf = keyBufs.Get().(*[]byte)
	key, err = m.keys.Encode(append((*buf)[:0], m.prefix...), k)
	if err != nil {
		putKey(buf, nil)
		return nil, nil, fmt.Errorf("state: %s: encode key: %w", m.name, err)
	}
	return key, buf, nil
}

// keyBufs holds the buffers Map builds keys in.
var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64); return &b }}

// putKey gives buf back, keeping key's array if it grew (a key that did
// not fit); an oversized one is dropped.
func putKey(buf *[]byte, key []byte) {
	if cap(key) > cap(*buf) {
		*buf = key[:0]
	}
	if cap(*buf) <= 4<<10 {
		keyBufs.Put(buf)
	}
}

// Get returns k's value, and false if k has none.
func (m Map[K, V]) Get(s sdk.State, k K) (V, bool, error) {
	key, buf, err := m.key(k)
	if err != nil {
		var zero V
		return zero, false, err
	}
	v, ok, err := get(s, m.name, key, m.values)
	putKey(buf, key)
	return v, ok, err
}

// Put stores v under k.
func (m Map[K, V]) Put(s sdk.State, k K, v V) error {
	key, buf, err := m.key(k)
	if err != nil {
		return err
	}
	err = set(s, m.name, key, m.values, v)
	putKey(buf, key)
	return err
}

// Delete removes k; a key that is absent is no error. The error is the
// key codec's.
func (m Map[K, V]) Delete(s sdk.State, k K) error {
	key, buf, err := m.key(k)
	if err != nil {
		return err
	}
	s.Delete(key)
	putKey(buf, key)
	return nil
}

// Scan calls fn for every entry, in the order of the keys' bytes (see
// NewMap), as State.Scan does: fn's error stops it and is returned. fn
// must not write the map; collect and write after Scan returns.
func (m Map[K, V]) Scan(s sdk.State, fn func(k K, v V) error) error {
	return s.Scan(m.prefix, func(key, value []byte) error {
		k, err := decode(m.name, "key", m.keys, key[len(m.prefix):])
		if err != nil {
			return err
		}
		v, err := decode(m.name, "value", m.values, value)
		if err != nil {
			return err
		}
		return fn(k, v)
	})
}

// Clear removes every entry (one State.Delete each).
func (m Map[K, V]) Clear(s sdk.State) error { return deleteAll(s, m.name, m.prefix) }

// List is a typed, append-only list under a name: one State entry per
// element and one for the next index, so Append costs a Get and two Sets
// whatever the list's length; All reads it with one Scan.
type List[V any] struct {
	name   string // for errors: `list "buffered"`
	elems  []byte // prefix of the elements' keys
	next   []byte // key of the next index
	values codec.Codec[V]
}

// NewList returns the List called name, its elements encoded with c.
func NewList[V any](name string, c codec.Codec[V]) List[V] {
	ns := namespace(kindList, name)
	return List[V]{
		name:   describe(kindList, name),
		elems:  append(withSuffix(ns, 1), listElem),
		next:   append(withSuffix(ns, 1), listNext),
		values: c,
	}
}

// index is the codec of element indexes and of the next index: bytes in
// numeric order, so a Scan returns the elements in the order appended.
var index = codec.Uint64()

// Append adds v at the end of the list.
func (l List[V]) Append(s sdk.State, v V) error {
	n, _, err := get(s, l.name, l.next, index)
	if err != nil {
		return err
	}
	key, _ := index.Encode(withSuffix(l.elems, 8), n)
	if err := set(s, l.name, key, l.values, v); err != nil {
		return err
	}
	return set(s, l.name, l.next, index, n+1)
}

// All returns the elements in the order they were appended (nil for an
// empty list).
func (l List[V]) All(s sdk.State) ([]V, error) {
	var out []V
	err := s.Scan(l.elems, func(_, value []byte) error {
		v, err := decode(l.name, "element", l.values, value)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// Clear removes every element (one State.Delete each), so the list is
// empty and its next index 0.
func (l List[V]) Clear(s sdk.State) error {
	if err := deleteAll(s, l.name, l.elems); err != nil {
		return err
	}
	s.Delete(l.next)
	return nil
}
