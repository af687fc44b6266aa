package wasmop

import (
	"errors"
	"fmt"
)

// Errors of the wasm host.
var (
	// ErrGuestFailed marks an attempt whose guest instance died: it
	// trapped (a Go guest's panic, an unreachable instruction), exited,
	// ran past Config.CallTimeout or past Config.MemoryLimitPages. The
	// error also wraps core.ErrBadRecord, so the runtime dead-letters the
	// record at once; the operator replaces the dead instance with a
	// fresh one before its next call.
	ErrGuestFailed = errors.New("wasmop: guest failed")
	// ErrTimeout is wrapped (with ErrGuestFailed) by a call that ran past
	// Config.CallTimeout.
	ErrTimeout = errors.New("wasmop: guest call timed out")
	// ErrClosed is returned by a Host used after Close.
	ErrClosed = errors.New("wasmop: host closed")
)

// ModuleError reports a module that cannot run as an operator: the file
// is missing, is not WebAssembly, or lacks the guest ABI's exports. Field
// names the manifest field ("module").
type ModuleError struct {
	Path    string // the module's path
	Field   string // the manifest field, "module"
	Problem string // what is wrong and how to fix it
	Err     error  // the underlying error, if any
}

// Error returns e.g. `module: /x/wc.wasm: not a WebAssembly module ...`.
func (e *ModuleError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Field, e.Path, e.Problem)
}

// Unwrap returns the underlying error.
func (e *ModuleError) Unwrap() error { return e.Err }
