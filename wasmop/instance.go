package wasmop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sluicehq/sluice/internal/core"
)

// instance is one guest module instance: its memory, its exports, the
// input buffer the guest handed out, and the per-call state the host
// functions read (the operator's Context, errors raised by the guest or by
// the host). It is used by one operator instance at a time, on its
// goroutine; only the deadline timer's callback runs elsewhere.
type instance struct {
	mod  api.Module
	mem  api.Memory
	fns  [4]api.Function // exportBuffer, exportInit, exportProcess, exportTimer
	buf  uint32          // the guest's input buffer
	bufN uint32          // its capacity
	// stack is the parameter and result stack of CallWithStack.
	stack [8]uint64

	ctx     context.Context // carries the instance to the host functions
	cancel  context.CancelCauseFunc
	timeout time.Duration

	guardMu  sync.Mutex // guards deadline, armed against the timer's callback
	deadline time.Time
	armed    bool
	timer    *time.Timer

	// Set during a call.
	cur      core.Context
	outputs  []string // the operator's declared outputs, to intern stream names
	hostErr  error    // a host function failed: the attempt fails
	guestErr string   // the message the guest gave with a non-zero status
	scratch  []byte

	stderr *tail
	dead   bool // trapped, exited, timed out or closed: never call again
}

// Indexes into instance.fns.
const (
	fnBuffer = iota
	fnInit
	fnProcess
	fnTimer
)

// ctxKey is the context key of the *instance calling a host function.
type ctxKey struct{}

// newInstance instantiates m: WASI with nothing granted but clocks,
// random and the error tail, then the module's _initialize (a reactor's
// start function, which runs a Go guest's package inits).
func newInstance(ctx context.Context, m *Module) (*instance, error) {
	in := &instance{timeout: m.host.cfg.CallTimeout, stderr: &tail{}}
	if m.host.cfg.NoCallTimeout {
		in.timeout = 0
	}
	base, cancel := context.WithCancelCause(context.Background())
	in.ctx, in.cancel = context.WithValue(base, ctxKey{}, in), cancel
	in.timer = time.AfterFunc(time.Hour, in.expire)
	in.timer.Stop()
	mc := wazero.NewModuleConfig().
		WithName(""). // anonymous: many instances of one module
		WithStartFunctions("_initialize").
		WithStdout(in.stderr).WithStderr(in.stderr).
		WithSysWalltime().WithSysNanotime().
		WithRandSource(randSource)
	in.arm()
	mod, err := m.host.rt.InstantiateModule(in.ctx, m.compiled, mc)
	timedOut := in.disarm()
	if err != nil {
		in.cancel(nil)
		if timedOut {
			err = fmt.Errorf("%w: %w", ErrTimeout, err)
		}
		return nil, fmt.Errorf("wasmop: instantiate %s: %w%s", m.path, err, in.stderr.suffix())
	}
	in.mod, in.mem = mod, mod.Memory()
	for i, name := range []string{exportBuffer, exportInit, exportProcess, exportTimer} {
		in.fns[i] = mod.ExportedFunction(name) // checked by checkABI
	}
	return in, nil
}

// expire is the deadline timer's callback: it stops the running call by
// cancelling the context wazero watches. A callback left over from an
// earlier call (it fired as that call returned) finds the deadline of the
// current one in the future, or nothing armed, and does nothing.
func (in *instance) expire() {
	in.guardMu.Lock()
	defer in.guardMu.Unlock()
	if in.armed && !time.Now().Before(in.deadline) {
		in.cancel(ErrTimeout)
	}
}

// arm starts the deadline of a call (none without a timeout).
func (in *instance) arm() {
	if in.timeout == 0 {
		return
	}
	in.guardMu.Lock()
	in.deadline = time.Now().Add(in.timeout)
	in.armed = true
	in.guardMu.Unlock()
	in.timer.Reset(in.timeout)
}

// disarm ends the deadline of a call and reports whether it expired.
func (in *instance) disarm() bool {
	if in.timeout == 0 {
		return false
	}
	in.timer.Stop()
	in.guardMu.Lock()
	in.armed = false
	in.guardMu.Unlock()
	return in.ctx.Err() != nil
}

// call calls export fn with the parameters in in.stack[:n] and returns its
// i32 status. A guest that trapped, exited or timed out is dead: the error
// wraps ErrGuestFailed and core.ErrBadRecord, and names what happened,
// with the tail of what the guest wrote to stderr (a Go panic's message).
func (in *instance) call(fn int) (uint32, error) {
	if in.dead {
		return 0, fmt.Errorf("%w: instance already failed", ErrGuestFailed)
	}
	in.stderr.reset()
	in.arm()
	err := in.fns[fn].CallWithStack(in.ctx, in.stack[:])
	timedOut := in.disarm()
	if err == nil && !timedOut {
		return uint32(in.stack[0]), nil
	}
	in.dead = true
	var what string
	var exit *sys.ExitError
	switch {
	case timedOut:
		what = fmt.Sprintf("ran past its deadline of %v", in.timeout)
	case errors.As(err, &exit):
		what = fmt.Sprintf("exited with code %d", exit.ExitCode())
	default:
		what, _, _ = strings.Cut(err.Error(), "\n") // without wazero's stack trace
		what = "trapped: " + what
	}
	if timedOut {
		return 0, fmt.Errorf("%w: %w (%w): %s%s", ErrGuestFailed, ErrTimeout, core.ErrBadRecord, what, in.stderr.suffix())
	}
	return 0, fmt.Errorf("%w: %w: %s%s", ErrGuestFailed, core.ErrBadRecord, what, in.stderr.suffix())
}

// ensureBuffer makes the guest's input buffer hold at least n bytes.
func (in *instance) ensureBuffer(n uint32) error {
	if n <= in.bufN && in.buf != 0 {
		return nil
	}
	in.stack[0] = uint64(n)
	ptr, err := in.call(fnBuffer)
	if err != nil {
		return err
	}
	if ptr == 0 {
		return fmt.Errorf("%w: %w: the guest returned no buffer for %d bytes", ErrGuestFailed, core.ErrBadRecord, n)
	}
	in.buf, in.bufN = ptr, n
	return nil
}

// write copies parts into the input buffer, one after the other.
func (in *instance) write(parts ...[]byte) error {
	var n int
	for _, p := range parts {
		n += len(p)
	}
	if uint64(n) > 1<<31 {
		return fmt.Errorf("wasmop: record of %d bytes: too large for a guest", n)
	}
	if err := in.ensureBuffer(uint32(n)); err != nil {
		return err
	}
	off := in.buf
	for _, p := range parts {
		if !in.mem.Write(off, p) {
			return fmt.Errorf("%w: %w: input buffer at %d is outside the guest's memory", ErrGuestFailed, core.ErrBadRecord, off)
		}
		off += uint32(len(p))
	}
	return nil
}

// close closes the module and stops the timer.
func (in *instance) close(ctx context.Context) {
	in.dead = true
	in.timer.Stop()
	in.cancel(nil)
	if in.mod != nil {
		_ = in.mod.Close(ctx)
	}
}

// tailSize is how much of a guest's output during one call an instance
// keeps.
const tailSize = 1024

// tail keeps the first tailSize bytes a guest wrote to stdout and stderr
// during the current call (a Go panic's message and first frames), for
// the error of a failed call. It is written by the guest's calls, on the
// instance's goroutine, and reset when a call starts.
type tail struct {
	mu sync.Mutex
	b  []byte
}

// Write appends what fits of p.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := tailSize - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// reset forgets what was written.
func (t *tail) reset() {
	t.mu.Lock()
	t.b = t.b[:0]
	t.mu.Unlock()
}

// suffix returns "; guest output: …" with the kept output, or "".
func (t *tail) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.FieldsFunc(string(t.b), func(r rune) bool { return r == '\n' })
	if len(lines) == 0 {
		return ""
	}
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return "; guest output: " + strings.Join(lines[:min(len(lines), 3)], " | ")
}
