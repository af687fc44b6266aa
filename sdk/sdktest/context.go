package sdktest

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// opContext is the sdk.Context handed to the operator's callbacks.
type opContext struct {
	context.Context
	h *Harness
}

var _ sdk.Context = opContext{}

func (h *Harness) context() opContext { return opContext{Context: h.ctx, h: h} }

// Produce buffers rec for stream until the callback succeeds.
func (c opContext) Produce(stream string, rec sdk.Record) error {
	h := c.h
	if !h.outputs[stream] {
		return fmt.Errorf("operator %q: produce to %q: %w (declared outputs: %v)", h.meta.Name, stream, sdk.ErrUnknownStream, h.meta.Outputs)
	}
	if rec.EventTime.IsZero() {
		rec.EventTime = h.event
	}
	rec.Stream = stream
	h.pending = append(h.pending, Produced{Stream: stream, Record: rec})
	return nil
}

// SetTimer sets a processing-time timer in the current key group.
func (c opContext) SetTimer(key string, at time.Time) error {
	c.h.timers.set(c.h.group, key, at)
	return nil
}

// DeleteTimer removes a processing-time timer of the current key group.
func (c opContext) DeleteTimer(key string) error {
	c.h.timers.delete(c.h.group, key)
	return nil
}

// SetEventTimer sets an event-time timer in the current key group.
func (c opContext) SetEventTimer(key string, at time.Time) error {
	h := c.h
	if _, ok := h.op.(sdk.EventTimerProcessor); !ok {
		return fmt.Errorf("operator %q: SetEventTimer: %w", h.meta.Name, sdk.ErrNotEventTimerProcessor)
	}
	h.etimers.set(h.group, key, at)
	return nil
}

// DeleteEventTimer removes an event-time timer of the current key group.
func (c opContext) DeleteEventTimer(key string) error {
	c.h.etimers.delete(c.h.group, key)
	return nil
}

// Watermark returns the instance's watermark.
func (c opContext) Watermark() time.Time { return c.h.wm }

// State returns the state of the current key group.
func (c opContext) State() sdk.State { return stateView{c.h} }

// Instance describes the instance.
func (c opContext) Instance() sdk.InstanceInfo { return c.h.info }

// Logger returns the operator's logger.
func (c opContext) Logger() *slog.Logger { return c.h.logger }

// stateView is sdk.State over the harness's current key group.
type stateView struct{ h *Harness }

var _ sdk.State = stateView{}

func (s stateView) Get(key []byte) ([]byte, error) {
	v, ok := s.h.state.get(s.h.group, string(key))
	if !ok {
		return nil, sdk.ErrNotFound
	}
	return v, nil
}

func (s stateView) Set(key, value []byte) {
	s.h.state.set(s.h.group, string(key), append([]byte(nil), value...))
}

func (s stateView) Delete(key []byte) { s.h.state.delete(s.h.group, string(key)) }

// Scan walks the current key group's keys with prefix, in key order, over
// a snapshot taken when it starts (writes by fn are not seen).
func (s stateView) Scan(prefix []byte, fn func(key, value []byte) error) error {
	return s.scan(s.h.group, prefix, fn)
}

// ScanAllGroups walks every key group of the instance, as the runtime's
// State does (see sdk.ScanAllGroups): in order of key group, then key.
func (s stateView) ScanAllGroups(prefix []byte, fn func(key, value []byte) error) error {
	for _, g := range s.h.state.groups() {
		if g < s.h.info.FirstGroup || g >= s.h.info.EndGroup {
			continue
		}
		if err := s.scan(g, prefix, fn); err != nil {
			return err
		}
	}
	return nil
}

var _ sdk.AllGroupsScanner = stateView{}

// scan walks group g's keys with prefix, in key order, over a snapshot.
func (s stateView) scan(g int, prefix []byte, fn func(key, value []byte) error) error {
	keys := s.h.state.keys(g, string(prefix))
	vals := make([][]byte, len(keys))
	for j, k := range keys {
		vals[j] = s.h.state.data[g][k]
	}
	for j, k := range keys {
		if err := fn([]byte(k), vals[j]); err != nil {
			return err
		}
	}
	return nil
}
