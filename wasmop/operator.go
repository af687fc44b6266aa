package wasmop

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/core"
)

// Operator is a core.Operator whose callbacks run in a wasm guest: each
// record and timer is one call into the guest's instance, which the
// operator instance owns from Init to Close (taken from and given back to
// its Module's pool). What the guest produces comes back in one emit batch
// per call; its state and timers are the operator instance's, through host
// functions. It is used on the instance's goroutine only, like any
// Operator.
type Operator struct {
	mod  *Module
	meta core.Metadata
	in   *instance
}

var (
	_ core.Operator            = (*Operator)(nil)
	_ core.EventTimerProcessor = (*Operator)(nil)
	_ core.Closer              = (*Operator)(nil)
)

// Factory returns a factory of operators with metadata meta running
// module m.
func (m *Module) Factory(meta core.Metadata) core.Factory {
	return func() core.Operator { return &Operator{mod: m, meta: meta} }
}

// Replaced returns how many guest instances of m were thrown away after
// they trapped, exited or timed out.
func (m *Module) Replaced() int64 { return m.replaced.Load() }

// Metadata returns the operator's metadata.
func (o *Operator) Metadata() core.Metadata { return o.meta }

// Init takes a guest instance and calls its sluice_init.
func (o *Operator) Init(ctx core.Context) error {
	if o.in != nil { // Init again without Close: keep no stale instance
		o.mod.put(ctx, o.in)
		o.in = nil
	}
	return o.start(ctx)
}

// start takes an instance from the pool and initializes it.
func (o *Operator) start(ctx core.Context) error {
	in, err := o.mod.get(ctx)
	if err != nil {
		return err
	}
	in.outputs = o.meta.Outputs
	o.in = in
	return o.invoke(ctx, fnInit)
}

// live returns the operator's instance, replacing one that died in an
// earlier call (its record was dead-lettered) with a fresh, initialized
// one.
func (o *Operator) live(ctx core.Context) (*instance, error) {
	if o.in != nil && !o.in.dead {
		return o.in, nil
	}
	if o.in != nil {
		o.in.close(ctx)
		o.in = nil
	}
	if err := o.start(ctx); err != nil {
		return nil, fmt.Errorf("wasmop: restart the guest: %w", err)
	}
	return o.in, nil
}

// ProcessRecord writes rec into the guest's input buffer and calls
// sluice_process once.
func (o *Operator) ProcessRecord(ctx core.Context, rec core.Record) error {
	in, err := o.live(ctx)
	if err != nil {
		return err
	}
	in.scratch = encodeHeaders(in.scratch[:0], rec.Headers)
	if err := in.write(stringBytes(rec.Stream), rec.Key, rec.Value, in.scratch); err != nil {
		return o.failed(err)
	}
	in.stack[0] = uint64(len(rec.Stream))
	in.stack[1] = uint64(len(rec.Key))
	in.stack[2] = uint64(len(rec.Value))
	in.stack[3] = uint64(len(in.scratch))
	in.stack[4] = uint64(unixNanos(rec.EventTime))
	return o.invoke(ctx, fnProcess)
}

// ProcessTimer calls sluice_timer for a processing-time timer.
func (o *Operator) ProcessTimer(ctx core.Context, key string, at time.Time) error {
	return o.timer(ctx, key, at, timerProcessing)
}

// ProcessEventTimer calls sluice_timer for an event-time timer.
func (o *Operator) ProcessEventTimer(ctx core.Context, key string, at time.Time) error {
	return o.timer(ctx, key, at, timerEvent)
}

// timer calls sluice_timer.
func (o *Operator) timer(ctx core.Context, key string, at time.Time, kind int) error {
	in, err := o.live(ctx)
	if err != nil {
		return err
	}
	if err := in.write(stringBytes(key)); err != nil {
		return o.failed(err)
	}
	in.stack[0] = uint64(len(key))
	in.stack[1] = uint64(unixNanos(at))
	in.stack[2] = uint64(kind)
	return o.invoke(ctx, fnTimer)
}

// Close gives the instance back to the module's pool (or closes it if it
// died).
func (o *Operator) Close(ctx core.Context) error {
	if o.in != nil {
		o.mod.put(ctx, o.in)
		o.in = nil
	}
	return nil
}

// invoke calls fn with the parameters set and turns its status, the
// guest's message and host-side errors into the callback's error.
func (o *Operator) invoke(ctx core.Context, fn int) error {
	in := o.in
	in.cur, in.hostErr, in.guestErr = ctx, nil, ""
	status, err := in.call(fn)
	in.cur = nil
	if err != nil {
		return o.failed(err)
	}
	if in.hostErr != nil {
		return in.hostErr
	}
	switch status {
	case statusOK:
		return nil
	case statusError:
		return fmt.Errorf("wasm guest %s: %s", o.mod.path, in.guestErr)
	case statusBadRecord:
		return fmt.Errorf("wasm guest %s: %s: %w", o.mod.path, in.guestErr, core.ErrBadRecord)
	}
	in.dead = true
	return o.failed(fmt.Errorf("%w: %w: unknown status %d from the guest", ErrGuestFailed, core.ErrBadRecord, status))
}

// failed counts a dead instance and returns err.
func (o *Operator) failed(err error) error {
	if o.in != nil && o.in.dead {
		o.mod.replaced.Add(1)
	}
	return err
}

// encodeHeaders appends hs as repeated u32 keyLen | key | u32 valueLen |
// value.
func encodeHeaders(b []byte, hs []core.Header) []byte {
	for _, h := range hs {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h.Key)))
		b = append(b, h.Key...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h.Value)))
		b = append(b, h.Value...)
	}
	return b
}

// replacedCounter counts replaced instances in Module.
type replacedCounter = atomic.Int64
