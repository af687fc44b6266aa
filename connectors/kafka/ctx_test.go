package kafka_test

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// callCtx is an sdk.Context for calling an operator's methods directly, as
// the runtime does on the instance's goroutine: it keeps produced records
// and state in memory.
type callCtx struct {
	context.Context
	info     sdk.InstanceInfo
	produced map[string][]sdk.Record
	state    *memState
	log      *slog.Logger // nil: quiet
}

// newCallCtx returns the context of instance index of par of operator op
// under at-least-once, with one key group per instance and empty state.
func newCallCtx(op string, index, par int) *callCtx {
	return newGuaranteeCtx(op, index, par, sdk.AtLeastOnce, nil)
}

// newGuaranteeCtx returns the context of instance index of par of op
// under guarantee g, with one key group per instance (the instance's is
// index) holding snap.
func newGuaranteeCtx(op string, index, par int, g sdk.Guarantee, snap stateSnap) *callCtx {
	info := sdk.InstanceInfo{Operator: op, Index: index, Parallelism: par, KeyGroups: par,
		FirstGroup: index, EndGroup: index + 1, Guarantee: g}
	return &callCtx{Context: context.Background(), info: info, produced: map[string][]sdk.Record{}, state: restoreState(snap, index, index+1)}
}

// withGroups returns c's context for an instance owning key groups
// [first, end) of keyGroups, holding snap: a restore after a rescale.
func (c *callCtx) withGroups(index, par, keyGroups, first, end int, snap stateSnap) *callCtx {
	info := c.info
	info.Index, info.Parallelism, info.KeyGroups, info.FirstGroup, info.EndGroup = index, par, keyGroups, first, end
	return &callCtx{Context: context.Background(), info: info, produced: map[string][]sdk.Record{}, state: restoreState(snap, first, end)}
}

// restored returns a fresh context of the same instance holding snap: the
// instance restored from a checkpoint.
func (c *callCtx) restored(snap stateSnap) *callCtx {
	return &callCtx{Context: context.Background(), info: c.info, produced: map[string][]sdk.Record{}, state: restoreState(snap, c.info.FirstGroup, c.info.EndGroup)}
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
func (c *callCtx) Logger() *slog.Logger {
	if c.log != nil {
		return c.log
	}
	return quiet
}

// stateSnap is a copy of state by key group: what a checkpoint keeps.
type stateSnap map[int]map[string][]byte

// merge returns the union of snaps (of instances owning disjoint groups).
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
// runtime's: writes go to the instance's first key group (where the
// runtime puts the writes of Init, Poll, PreCommit and Commit), Scan
// covers every group the instance owns, in order of group then key.
type memState struct {
	groups       map[int]map[string][]byte
	first, end   int
	writes, dels int
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

// snapshot copies the state, as a checkpoint does.
func (m *memState) snapshot() stateSnap {
	out := stateSnap{}
	for g, kv := range m.groups {
		out[g] = maps.Clone(kv)
	}
	return out
}

// len returns the number of keys in every group.
func (m *memState) len() int {
	n := 0
	for _, kv := range m.groups {
		n += len(kv)
	}
	return n
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

// startOp makes an instance (index of par) of f's operator with a callCtx
// under at-least-once and Inits it, as the runtime would; it is closed
// when the test ends.
func startOp[T interface {
	sdk.Operator
	sdk.Closer
}](t *testing.T, f sdk.Factory, index, par int) (T, *callCtx) {
	t.Helper()
	op := f().(T)
	c := newCallCtx(op.Metadata().Name, index, par)
	if err := op.Init(c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = op.Close(c) })
	return op, c
}
