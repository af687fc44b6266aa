//go:build wasip1

package guest

import (
	"encoding/binary"
	"errors"
	"time"
	"unsafe"
)

// The host's functions (module "sluice"; docs/operator-protocol.md).

//go:wasmimport sluice state_get
func stateGet(key unsafe.Pointer, keyLen uint32, dst unsafe.Pointer, dstCap uint32) int32

//go:wasmimport sluice state_set
func stateSet(key unsafe.Pointer, keyLen uint32, val unsafe.Pointer, valLen uint32)

//go:wasmimport sluice state_delete
func stateDelete(key unsafe.Pointer, keyLen uint32)

//go:wasmimport sluice emit
func emit(batch unsafe.Pointer, n uint32) int32

//go:wasmimport sluice set_timer
func setTimer(key unsafe.Pointer, keyLen uint32, at int64, kind int32)

//go:wasmimport sluice delete_timer
func deleteTimer(key unsafe.Pointer, keyLen uint32, kind int32)

//go:wasmimport sluice watermark
func watermark() int64

//go:wasmimport sluice fail
func fail(msg unsafe.Pointer, n uint32)

//go:wasmimport sluice log
func logMsg(level int32, msg unsafe.Pointer, n uint32)

// Timer kinds and statuses of the ABI.
const (
	timerProcessing = 0
	timerEvent      = 1

	statusOK        = 0
	statusError     = 1
	statusBadRecord = 2
)

// input is the buffer the host writes each input into.
var input []byte

// lastStream is the stream name of the previous record, reused while the
// stream stays the same so a record costs no string allocation.
var lastStream string

//go:wasmexport sluice_buffer
func sluiceBuffer(size uint32) unsafe.Pointer {
	if uint32(cap(input)) < size || cap(input) == 0 {
		input = make([]byte, max(size, 4096))
	}
	input = input[:cap(input)]
	return unsafe.Pointer(&input[0])
}

//go:wasmexport sluice_init
func sluiceInit() int32 {
	if registered == nil {
		return finish(errors.New("no operator: call guest.Register in an init function"))
	}
	if i, ok := registered.(Initer); ok {
		return finish(i.Init(&ctx))
	}
	return finish(nil)
}

//go:wasmexport sluice_process
func sluiceProcess(streamLen, keyLen, valueLen, headersLen uint32, eventTime int64) int32 {
	b := input
	stream := b[:streamLen]
	if string(stream) != lastStream {
		lastStream = string(stream)
	}
	b = b[streamLen:]
	rec := Record{Stream: lastStream, Key: b[:keyLen:keyLen], Value: b[keyLen : keyLen+valueLen : keyLen+valueLen]}
	if keyLen == 0 {
		rec.Key = nil
	}
	if eventTime != 0 {
		rec.EventTime = time.Unix(0, eventTime)
	}
	if headersLen > 0 {
		rec.Headers = decodeHeaders(b[keyLen+valueLen : keyLen+valueLen+headersLen])
	}
	return finish(registered.ProcessRecord(&ctx, rec))
}

//go:wasmexport sluice_timer
func sluiceTimer(keyLen uint32, at int64, kind int32) int32 {
	key := string(input[:keyLen])
	t := time.Unix(0, at)
	switch kind {
	case timerEvent:
		if p, ok := registered.(EventTimerProcessor); ok {
			return finish(p.ProcessEventTimer(&ctx, key, t))
		}
	default:
		if p, ok := registered.(TimerProcessor); ok {
			return finish(p.ProcessTimer(&ctx, key, t))
		}
	}
	return finish(errors.New("a timer fired but the operator implements no ProcessTimer/ProcessEventTimer"))
}

// finish flushes the output and turns err into a status, telling the
// host its message.
func finish(err error) int32 {
	ctx.flush()
	if ctx.failed {
		ctx.failed = false
		return statusError // the host has the reason
	}
	if err == nil {
		return statusOK
	}
	msg := err.Error()
	fail(strPtr(msg), uint32(len(msg)))
	if errors.Is(err, ErrBadRecord) {
		return statusBadRecord
	}
	return statusError
}

// decodeHeaders decodes repeated u32 keyLen | key | u32 valueLen | value.
func decodeHeaders(b []byte) []Header {
	var hs []Header
	for len(b) >= 4 {
		n := binary.LittleEndian.Uint32(b)
		k := string(b[4 : 4+n])
		b = b[4+n:]
		m := binary.LittleEndian.Uint32(b)
		v := string(b[4 : 4+m])
		b = b[4+m:]
		hs = append(hs, Header{Key: k, Value: v})
	}
	return hs
}

// ptr returns the address of b's first byte (nil for an empty slice).
func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// strPtr returns the address of s's first byte.
func strPtr(s string) unsafe.Pointer { return unsafe.Pointer(unsafe.StringData(s)) }
