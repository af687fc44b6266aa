package sdktest

import (
	"bytes"
	"slices"
	"strings"
	"time"
)

// groupMap is a map per key group with an undo log, so that a failed
// callback's changes can be rolled back. V is a state value or a timer's
// due time.
type groupMap[V any] struct {
	data map[int]map[string]V
	undo []undo[V]
}

// undo restores one entry: its value before the attempt, or its absence.
type undo[V any] struct {
	group int
	key   string
	old   V
	had   bool
}

func newGroupMap[V any]() groupMap[V] { return groupMap[V]{data: make(map[int]map[string]V)} }

func (m *groupMap[V]) get(group int, key string) (V, bool) {
	v, ok := m.data[group][key]
	return v, ok
}

func (m *groupMap[V]) note(group int, key string) {
	old, had := m.get(group, key)
	m.undo = append(m.undo, undo[V]{group: group, key: key, old: old, had: had})
}

func (m *groupMap[V]) set(group int, key string, v V) {
	m.note(group, key)
	g := m.data[group]
	if g == nil {
		g = make(map[string]V)
		m.data[group] = g
	}
	g[key] = v
}

func (m *groupMap[V]) delete(group int, key string) {
	if _, ok := m.get(group, key); !ok {
		return
	}
	m.note(group, key)
	m.remove(group, key)
}

func (m *groupMap[V]) remove(group int, key string) {
	delete(m.data[group], key)
	if len(m.data[group]) == 0 {
		delete(m.data, group)
	}
}

// commit forgets the undo log: the attempt's changes stay.
func (m *groupMap[V]) commit() { m.undo = m.undo[:0] }

// rollback undoes the attempt's changes, newest first.
func (m *groupMap[V]) rollback() {
	for j := len(m.undo) - 1; j >= 0; j-- {
		u := m.undo[j]
		if u.had {
			g := m.data[u.group]
			if g == nil {
				g = make(map[string]V)
				m.data[u.group] = g
			}
			g[u.key] = u.old
		} else {
			m.remove(u.group, u.key)
		}
	}
	m.undo = m.undo[:0]
}

// keys returns the keys of group with the prefix, sorted.
func (m *groupMap[V]) keys(group int, prefix string) []string {
	var ks []string
	for k := range m.data[group] {
		if strings.HasPrefix(k, prefix) {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}

// groups returns the key groups holding entries, sorted.
func (m *groupMap[V]) groups() []int {
	gs := make([]int, 0, len(m.data))
	for g := range m.data {
		gs = append(gs, g)
	}
	slices.Sort(gs)
	return gs
}

// Entry is one state entry of an instance.
type Entry struct {
	Group int
	Key   []byte
	Value []byte
}

// Timer is one pending timer (processing-time or event-time).
type Timer struct {
	Group int
	Key   string
	At    time.Time
}

// entries lists every entry of m in order of key group, then key.
func entries(m *groupMap[[]byte]) []Entry {
	var out []Entry
	for _, g := range m.groups() {
		for _, k := range m.keys(g, "") {
			out = append(out, Entry{Group: g, Key: []byte(k), Value: bytes.Clone(m.data[g][k])})
		}
	}
	return out
}

// timers lists every timer of m in firing order: by due time, then key
// group, then key.
func timers(m *groupMap[time.Time]) []Timer {
	var out []Timer
	for g, ks := range m.data {
		for k, at := range ks {
			out = append(out, Timer{Group: g, Key: k, At: at})
		}
	}
	slices.SortFunc(out, compareTimers)
	return out
}

func compareTimers(a, b Timer) int {
	if c := a.At.Compare(b.At); c != 0 {
		return c
	}
	if a.Group != b.Group {
		return a.Group - b.Group
	}
	return strings.Compare(a.Key, b.Key)
}
