package file_test

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// callCtx is an sdk.Context for calling an operator's methods directly, as
// the runtime does on the instance's goroutine: it keeps produced records
// and key-grouped state in memory.
type callCtx struct {
	context.Context
	info     sdk.InstanceInfo
	produced map[string][]sdk.Record
	state    *memState
}

// eoCtx returns the context of instance index of par of operator op under
// exactly-once, owning key groups [first, end), with state snap.
func eoCtx(op string, index, par, first, end int, snap stateSnap) *callCtx {
	info := sdk.InstanceInfo{Operator: op, Index: index, Parallelism: par, KeyGroups: max(end, par),
		FirstGroup: first, EndGroup: end, Guarantee: sdk.ExactlyOnce}
	return &callCtx{Context: context.Background(), info: info, produced: map[string][]sdk.Record{}, state: restoreState(snap, first, end)}
}

// restored returns a fresh context of the same instance holding snap.
func (c *callCtx) restored(snap stateSnap) *callCtx {
	return eoCtx(c.info.Operator, c.info.Index, c.info.Parallelism, c.info.FirstGroup, c.info.EndGroup, snap)
}

func (c *callCtx) Produce(stream string, rec sdk.Record) error {
	c.produced[stream] = append(c.produced[stream], rec)
	return nil
}
func (c *callCtx) SetTimer(string, time.Time) error      { return nil }
func (c *callCtx) DeleteTimer(string) error              { return nil }
func (c *callCtx) SetEventTimer(string, time.Time) error { return nil }
func (c *callCtx) DeleteEventTimer(string) error         { return nil }
func (c *callCtx) Watermark() time.Time                  { return time.Time{} }
func (c *callCtx) State() sdk.State                      { return c.state }
func (c *callCtx) Instance() sdk.InstanceInfo            { return c.info }
func (c *callCtx) Logger() *slog.Logger                  { return slog.New(slog.DiscardHandler) }

// stateSnap is a copy of state by key group: what a checkpoint keeps.
type stateSnap map[int]map[string][]byte

// merge returns the union of snaps of instances owning disjoint groups.
func merge(snaps ...stateSnap) stateSnap {
	out := stateSnap{}
	for _, s := range snaps {
		for g, kv := range s {
			out[g] = maps.Clone(kv)
		}
	}
	return out
}

// memState is an in-memory sdk.State partitioned by key group like the
// runtime's: writes go to the instance's first key group, Scan covers
// every group it owns.
type memState struct {
	groups     map[int]map[string][]byte
	first, end int
}

func restoreState(snap stateSnap, first, end int) *memState {
	m := &memState{groups: map[int]map[string][]byte{}, first: first, end: end}
	for g := first; g < end; g++ {
		m.groups[g] = maps.Clone(snap[g])
		if m.groups[g] == nil {
			m.groups[g] = map[string][]byte{}
		}
	}
	return m
}

func (m *memState) snapshot() stateSnap {
	out := stateSnap{}
	for g, kv := range m.groups {
		out[g] = maps.Clone(kv)
	}
	return out
}

// keys returns the keys with prefix in every group, sorted.
func (m *memState) keys(prefix string) []string {
	var out []string
	for _, kv := range m.groups {
		for k := range kv {
			if strings.HasPrefix(k, prefix) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

func (m *memState) Get(k []byte) ([]byte, error) {
	if v, ok := m.groups[m.first][string(k)]; ok {
		return v, nil
	}
	return nil, sdk.ErrNotFound
}
func (m *memState) Set(k, v []byte) { m.groups[m.first][string(k)] = slices.Clone(v) }
func (m *memState) Delete(k []byte) { delete(m.groups[m.first], string(k)) }
func (m *memState) Scan(prefix []byte, fn func(k, v []byte) error) error {
	for g := m.first; g < m.end; g++ {
		for _, k := range slices.Sorted(maps.Keys(m.groups[g])) {
			if strings.HasPrefix(k, string(prefix)) {
				if err := fn([]byte(k), m.groups[g][k]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
