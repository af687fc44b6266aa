package actors

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/core"
)

// opContext is the core.Context handed to an instance's callbacks. There is
// one per instance; it reads the instance's current attempt.
type opContext struct {
	context.Context
	inst       *instance
	lastStream string // the last stream produced to, known to be declared
}

var _ core.Context = (*opContext)(nil)

// Produce buffers rec for the subscribers of stream.
func (c *opContext) Produce(stream string, rec core.Record) error {
	i := c.inst
	if stream != c.lastStream {
		if !i.outs[stream] {
			// A redeploy may have added it, and this record come before
			// the coordinator's word of it.
			if spec, ok := i.node.topology().Find(i.key.op); ok {
				i.adopt(spec)
			}
		}
		if !i.outs[stream] {
			err := fmt.Errorf("operator %q: produce to %q: %w (declared outputs: %v)", i.key.op, stream, core.ErrUnknownStream, i.spec.Meta.Outputs)
			// Shown in the status even if the operator drops the error.
			i.setLastError(err.Error())
			return err
		}
		c.lastStream = stream
	}
	if err := i.node.checkRecordSize(stream, rec); err != nil {
		return fmt.Errorf("operator %q: %w", i.key.op, err)
	}
	if rec.EventTime.IsZero() {
		rec.EventTime = i.at.event
	}
	if i.cur.kind == workPoll {
		i.noteEventTime(rec.EventTime)
	}
	if obs := i.node.cfg.Observer; obs != nil {
		if i.at.trace != "" {
			rec = withTrace(rec, i.at.trace) // carry the trace on
		} else if i.cur.kind == workPoll && i.sampleSource(obs) {
			tp, end := obs.StartSpan(status.SpanInfo{Operator: i.key.op, Instance: i.key.index, Node: i.node.cfg.NodeID, Start: time.Now()})
			end(nil)
			rec = withTrace(rec, tp)
		}
	}
	i.out.Produce(stream, rec)
	i.produced++
	return nil
}

// SetTimer stores a timer in the current key group.
func (c *opContext) SetTimer(key string, at time.Time) error {
	i := c.inst
	i.store.SetTimer(i.at.group, key, at)
	i.at.timerOps = append(i.at.timerOps, timerOp{group: i.at.group, key: key, at: at})
	return nil
}

// DeleteTimer removes a timer from the current key group.
func (c *opContext) DeleteTimer(key string) error {
	i := c.inst
	i.store.DeleteTimer(i.at.group, key)
	i.at.timerOps = append(i.at.timerOps, timerOp{group: i.at.group, key: key, delete: true})
	return nil
}

// State returns the instance's state, scoped to the current key group.
func (c *opContext) State() core.State { return stateView{c.inst} }

// Instance describes the instance.
func (c *opContext) Instance() core.InstanceInfo {
	i := c.inst
	return core.InstanceInfo{
		Operator:    i.key.op,
		Index:       i.key.index,
		Parallelism: i.spec.Meta.Parallelism,
		Node:        i.node.cfg.NodeID,
		KeyGroups:   i.spec.Meta.KeyGroups,
		FirstGroup:  i.lo,
		EndGroup:    i.hi,
		Guarantee:   i.node.guarantee(),
		Window:      i.spec.Meta.Window,
	}
}

// Logger returns the instance's logger.
func (c *opContext) Logger() *slog.Logger { return c.inst.log }

// stateView adapts the instance's Store to core.State.
type stateView struct{ i *instance }

var (
	_ core.State       = stateView{}
	_ core.OwnedSetter = stateView{}
)

func (s stateView) Get(key []byte) ([]byte, error) {
	v, ok, err := s.i.store.Get(s.i.at.group, key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, core.ErrNotFound
	}
	return v, nil
}

func (s stateView) Set(key, value []byte) { s.i.store.Set(s.i.at.group, key, value) }

// SetOwned implements core.OwnedSetter.
func (s stateView) SetOwned(key, value []byte) { s.i.store.SetOwned(s.i.at.group, key, value) }

func (s stateView) Delete(key []byte) { s.i.store.Delete(s.i.at.group, key) }

// Scan scans the current key group only (see core.State).
func (s stateView) Scan(prefix []byte, fn func(key, value []byte) error) error {
	return s.i.store.Scan(s.i.at.group, s.i.at.group+1, prefix, func(_ int, k, v []byte) error { return fn(k, v) })
}

// ScanAllGroups scans every key group the instance owns.
func (s stateView) ScanAllGroups(prefix []byte, fn func(key, value []byte) error) error {
	return s.i.store.Scan(s.i.lo, s.i.hi, prefix, func(_ int, k, v []byte) error { return fn(k, v) })
}

var _ core.AllGroupsScanner = stateView{}

// SetEventTimer stores an event-time timer in the current key group; it
// fires once the watermark reaches at (see eventtime.go).
func (c *opContext) SetEventTimer(key string, at time.Time) error {
	i := c.inst
	if _, ok := i.opv.(core.EventTimerProcessor); !ok {
		return fmt.Errorf("operator %q: SetEventTimer(%q): %w", i.key.op, key, core.ErrNotEventTimerProcessor)
	}
	i.store.SetEventTimer(i.at.group, key, at)
	i.at.etOps = append(i.at.etOps, timerOp{group: i.at.group, key: key, at: at})
	return nil
}

// DeleteEventTimer removes an event-time timer from the current key group.
func (c *opContext) DeleteEventTimer(key string) error {
	i := c.inst
	i.store.DeleteEventTimer(i.at.group, key)
	i.at.etOps = append(i.at.etOps, timerOp{group: i.at.group, key: key, delete: true})
	return nil
}

// Watermark returns the instance's current watermark: the zero Time before
// any, the end of time (year 2262) once its input ended.
func (c *opContext) Watermark() time.Time { return wmTime(c.inst.watermark) }
