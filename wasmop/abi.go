package wasmop

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/sluicehq/sluice/internal/core"
)

// The guest ABI (docs/operator-protocol.md, "WebAssembly operators").
// Integers are little-endian; pointers and lengths are i32 offsets into
// the guest's memory; times are i64 Unix nanoseconds, 0 for none.
const (
	// hostModule is the module name of the host functions.
	hostModule = "sluice"

	// exportBuffer is sluice_buffer(size i32) → ptr i32: the guest
	// returns an input buffer of at least size bytes, valid until the next
	// sluice_buffer call; the host writes each input into it.
	exportBuffer = "sluice_buffer"
	// exportInit is sluice_init() → status i32, called once per
	// (re)start of the operator instance.
	exportInit = "sluice_init"
	// exportProcess is sluice_process(streamLen, keyLen, valueLen,
	// headersLen i32, eventTime i64) → status i32: one record, laid out
	// in the input buffer as stream | key | value | headers.
	exportProcess = "sluice_process"
	// exportTimer is sluice_timer(keyLen i32, at i64, kind i32) → status
	// i32: a timer of kind (timerProcessing, timerEvent) is due; its key
	// is in the input buffer.
	exportTimer = "sluice_timer"
)

// Status codes returned by the guest's exports.
const (
	statusOK        = 0 // the call succeeded
	statusError     = 1 // it failed: retried under the restart policy
	statusBadRecord = 2 // the record is bad: dead-lettered at once
)

// Timer kinds of set_timer, delete_timer and sluice_timer.
const (
	timerProcessing = 0
	timerEvent      = 1
)

// Results of state_get other than a length.
const (
	getNotFound = -1
	getFailed   = -2
)

// instantiateHostModule defines the "sluice" module's functions in rt.
// Each finds its instance in the call's context and works on the
// operator Context of the call in progress.
func instantiateHostModule(ctx context.Context, rt wazero.Runtime) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	b := rt.NewHostModuleBuilder(hostModule)
	def := func(name string, fn api.GoModuleFunc, params, results []api.ValueType) {
		b.NewFunctionBuilder().WithGoModuleFunction(fn, params, results).Export(name)
	}
	// state_get(keyPtr, keyLen, dstPtr, dstCap) → length, or -1 (not
	// found), -2 (failed: the attempt fails). A value longer than dstCap
	// is not written; the guest calls again with a larger buffer.
	def("state_get", hostStateGet, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32})
	// state_set(keyPtr, keyLen, valuePtr, valueLen)
	def("state_set", hostStateSet, []api.ValueType{i32, i32, i32, i32}, nil)
	// state_delete(keyPtr, keyLen)
	def("state_delete", hostStateDelete, []api.ValueType{i32, i32}, nil)
	// emit(ptr, len) → 0, or 1 if a record was refused (the attempt
	// fails): a batch of produced records (see decodeEmit).
	def("emit", hostEmit, []api.ValueType{i32, i32}, []api.ValueType{i32})
	// set_timer(keyPtr, keyLen, at, kind)
	def("set_timer", hostSetTimer, []api.ValueType{i32, i32, i64, i32}, nil)
	// delete_timer(keyPtr, keyLen, kind)
	def("delete_timer", hostDeleteTimer, []api.ValueType{i32, i32, i32}, nil)
	// watermark() → the instance's watermark, 0 for none yet.
	def("watermark", hostWatermark, nil, []api.ValueType{i64})
	// fail(msgPtr, msgLen): the error message of the status the guest is
	// about to return.
	def("fail", hostFail, []api.ValueType{i32, i32}, nil)
	// log(level, msgPtr, msgLen): a line to the operator's logger at
	// slog level (-4 debug, 0 info, 4 warn, 8 error).
	def("log", hostLog, []api.ValueType{i32, i32, i32}, nil)
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("wasmop: instantiate host module: %w", err)
	}
	return nil
}

// caller returns the instance making a host call and its operator
// Context; ok is false outside a call (a guest calling the host from its
// _initialize), which fails the instance's next call.
func caller(ctx context.Context) (*instance, bool) {
	in, _ := ctx.Value(ctxKey{}).(*instance)
	if in == nil {
		return nil, false
	}
	if in.cur == nil {
		in.hostErr = errors.New("wasmop: the guest called the host outside a call (in _initialize)")
		return nil, false
	}
	return in, true
}

// read returns a view of guest memory, or records an error.
func (in *instance) read(ptr, n uint32, what string) ([]byte, bool) {
	b, ok := in.mem.Read(ptr, n)
	if !ok {
		in.fail(fmt.Errorf("%w: %w: %s at %d+%d is outside the guest's memory", ErrGuestFailed, core.ErrBadRecord, what, ptr, n))
	}
	return b, ok
}

// fail keeps the first host-side error of the call.
func (in *instance) fail(err error) {
	if in.hostErr == nil {
		in.hostErr = err
	}
}

func hostStateGet(ctx context.Context, _ api.Module, s []uint64) {
	in, ok := caller(ctx)
	if !ok {
		s[0] = api.EncodeI32(getFailed)
		return
	}
	key, ok := in.read(uint32(s[0]), uint32(s[1]), "state_get key")
	if !ok {
		s[0] = api.EncodeI32(getFailed)
		return
	}
	v, err := in.cur.State().Get(key)
	switch {
	case errors.Is(err, core.ErrNotFound):
		s[0] = api.EncodeI32(getNotFound)
		return
	case err != nil:
		in.fail(fmt.Errorf("wasmop: state get: %w", err))
		s[0] = api.EncodeI32(getFailed)
		return
	}
	if uint64(len(v)) <= uint64(uint32(s[3])) && len(v) > 0 {
		if !in.mem.Write(uint32(s[2]), v) {
			in.fail(fmt.Errorf("%w: %w: state_get buffer at %d is outside the guest's memory", ErrGuestFailed, core.ErrBadRecord, uint32(s[2])))
			s[0] = api.EncodeI32(getFailed)
			return
		}
	}
	s[0] = uint64(uint32(len(v)))
}

func hostStateSet(ctx context.Context, _ api.Module, s []uint64) {
	in, ok := caller(ctx)
	if !ok {
		return
	}
	key, ok1 := in.read(uint32(s[0]), uint32(s[1]), "state_set key")
	val, ok2 := in.read(uint32(s[2]), uint32(s[3]), "state_set value")
	if ok1 && ok2 {
		in.cur.State().Set(key, val) // Set copies both
	}
}

func hostStateDelete(ctx context.Context, _ api.Module, s []uint64) {
	in, ok := caller(ctx)
	if !ok {
		return
	}
	if key, ok := in.read(uint32(s[0]), uint32(s[1]), "state_delete key"); ok {
		in.cur.State().Delete(key)
	}
}

func hostEmit(ctx context.Context, _ api.Module, s []uint64) {
	s0 := s
	in, ok := caller(ctx)
	if !ok {
		s0[0] = 1
		return
	}
	b, ok := in.read(uint32(s[0]), uint32(s[1]), "emit batch")
	if !ok {
		s0[0] = 1
		return
	}
	if err := in.decodeEmit(b); err != nil {
		in.fail(err)
		s0[0] = 1
		return
	}
	s0[0] = 0
}

// decodeEmit produces every record of an emit batch (see parseEmit).
func (in *instance) decodeEmit(b []byte) error {
	return parseEmit(b, func(stream []byte, rec core.Record) error {
		if err := in.cur.Produce(in.stream(stream), rec); err != nil {
			return fmt.Errorf("wasmop: produce to %q: %w", stream, err)
		}
		return nil
	})
}

// parseEmit calls fn with every record of an emit batch, each
//
//	u32 streamLen | stream | u32 keyLen | key | u32 valueLen | value |
//	i64 eventTime | u32 headersLen | headers
//
// with headers as repeated u32 keyLen | key | u32 valueLen | value. Key
// and value are copied into one allocation per record; stream is a view
// of b. A truncated batch is an error after the records before it.
func parseEmit(b []byte, fn func(stream []byte, rec core.Record) error) error {
	for len(b) > 0 {
		stream, rest, ok1 := chunk(b)
		key, rest, ok2 := chunk(rest)
		val, rest, ok3 := chunk(rest)
		if !ok1 || !ok2 || !ok3 || len(rest) < 8 {
			return fmt.Errorf("wasmop: emit: truncated record (%d bytes left)", len(b))
		}
		et := int64(binary.LittleEndian.Uint64(rest))
		hdrs, rest, ok := chunk(rest[8:])
		if !ok {
			return fmt.Errorf("wasmop: emit: truncated headers")
		}
		b = rest
		data := make([]byte, len(key)+len(val))
		copy(data, key)
		copy(data[len(key):], val)
		rec := core.Record{Value: data[len(key):]}
		if len(key) > 0 {
			rec.Key = data[:len(key):len(key)]
		}
		if et != 0 {
			rec.EventTime = time.Unix(0, et)
		}
		for len(hdrs) > 0 {
			k, r, ok1 := chunk(hdrs)
			v, r, ok2 := chunk(r)
			if !ok1 || !ok2 {
				return fmt.Errorf("wasmop: emit: truncated header")
			}
			rec.Headers = append(rec.Headers, core.Header{Key: string(k), Value: string(v)})
			hdrs = r
		}
		if err := fn(stream, rec); err != nil {
			return err
		}
	}
	return nil
}

// stream returns the declared output named b without allocating, or b as
// a new string (Produce then refuses it).
func (in *instance) stream(b []byte) string {
	for _, s := range in.outputs {
		if s == string(b) {
			return s
		}
	}
	return string(b)
}

// chunk splits a u32-length-prefixed field off b.
func chunk(b []byte) (field, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}

func hostSetTimer(ctx context.Context, _ api.Module, s []uint64) {
	in, ok := caller(ctx)
	if !ok {
		return
	}
	key, ok := in.read(uint32(s[0]), uint32(s[1]), "set_timer key")
	if !ok {
		return
	}
	at := time.Unix(0, int64(s[2]))
	var err error
	if uint32(s[3]) == timerEvent {
		err = in.cur.SetEventTimer(string(key), at)
	} else {
		err = in.cur.SetTimer(string(key), at)
	}
	if err != nil {
		in.fail(fmt.Errorf("wasmop: set timer %q: %w", key, err))
	}
}

func hostDeleteTimer(ctx context.Context, _ api.Module, s []uint64) {
	in, ok := caller(ctx)
	if !ok {
		return
	}
	key, ok := in.read(uint32(s[0]), uint32(s[1]), "delete_timer key")
	if !ok {
		return
	}
	var err error
	if uint32(s[2]) == timerEvent {
		err = in.cur.DeleteEventTimer(string(key))
	} else {
		err = in.cur.DeleteTimer(string(key))
	}
	if err != nil {
		in.fail(fmt.Errorf("wasmop: delete timer %q: %w", key, err))
	}
}

func hostWatermark(ctx context.Context, _ api.Module, s []uint64) {
	in, ok := caller(ctx)
	if !ok {
		s[0] = 0
		return
	}
	s[0] = uint64(unixNanos(in.cur.Watermark()))
}

func hostFail(ctx context.Context, _ api.Module, s []uint64) {
	in, _ := ctx.Value(ctxKey{}).(*instance)
	if in == nil {
		return
	}
	if msg, ok := in.read(uint32(s[0]), uint32(s[1]), "fail message"); ok {
		in.guestErr = string(msg)
	}
}

func hostLog(ctx context.Context, _ api.Module, s []uint64) {
	in, ok := caller(ctx)
	if !ok {
		return
	}
	if msg, ok := in.read(uint32(s[1]), uint32(s[2]), "log message"); ok {
		in.cur.Logger().Log(ctx, slog.Level(int32(uint32(s[0]))), string(msg), "source", "wasm guest")
	}
}

// unixNanos returns t in Unix nanoseconds, 0 for the zero Time.
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
