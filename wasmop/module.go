package wasmop

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Module is a compiled guest module of a Host, with its pool of idle
// instances. It is safe for concurrent use.
type Module struct {
	host     *Host
	path     string
	compiled wazero.CompiledModule

	mu   sync.Mutex // guards idle
	idle []*instance

	replaced replacedCounter
}

// Path returns the file the module was loaded from.
func (m *Module) Path() string { return m.path }

// get returns an idle instance or a new one.
func (m *Module) get(ctx context.Context) (*instance, error) {
	m.mu.Lock()
	if n := len(m.idle); n > 0 {
		in := m.idle[n-1]
		m.idle = m.idle[:n-1]
		m.mu.Unlock()
		return in, nil
	}
	m.mu.Unlock()
	return newInstance(ctx, m)
}

// put returns a healthy instance to the pool, or closes it when the pool
// is full or the host closed.
func (m *Module) put(ctx context.Context, in *instance) {
	m.host.mu.Lock()
	closed := m.host.closed
	m.host.mu.Unlock()
	m.mu.Lock()
	if !closed && !in.dead && len(m.idle) < m.host.cfg.PoolSize {
		m.idle = append(m.idle, in)
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	in.close(ctx)
}

// drainPool closes the idle instances.
func (m *Module) drainPool(ctx context.Context) {
	m.mu.Lock()
	idle := m.idle
	m.idle = nil
	m.mu.Unlock()
	for _, in := range idle {
		in.close(ctx)
	}
}

// wasmMagic starts every WebAssembly binary: "\0asm", version 1.
var wasmMagic = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

// checkMagic refuses bytes that are not a WebAssembly binary.
func checkMagic(path string, b []byte) error {
	if !bytes.HasPrefix(b, wasmMagic) {
		return &ModuleError{Path: path, Field: "module", Problem: "not a WebAssembly module (no \\0asm version 1 header): build the operator with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared"}
	}
	return nil
}

// requiredExports are the guest ABI's functions every module exports,
// with their signatures (see docs/operator-protocol.md).
var requiredExports = map[string]struct{ params, results []api.ValueType }{
	exportBuffer:  {[]api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
	exportInit:    {nil, []api.ValueType{api.ValueTypeI32}},
	exportProcess: {[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI64}, []api.ValueType{api.ValueTypeI32}},
	exportTimer:   {[]api.ValueType{api.ValueTypeI32, api.ValueTypeI64, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
}

// checkABI refuses a module without the guest ABI's exports, with other
// signatures, without a memory, or importing modules other than "sluice"
// and WASI.
func checkABI(path string, cm wazero.CompiledModule) error {
	bad := func(format string, args ...any) error {
		return &ModuleError{Path: path, Field: "module", Problem: fmt.Sprintf(format, args...)}
	}
	exps := cm.ExportedFunctions()
	var missing []string
	for name, sig := range requiredExports {
		f, ok := exps[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		if !slices.Equal(f.ParamTypes(), sig.params) || !slices.Equal(f.ResultTypes(), sig.results) {
			return bad("export %s has the wrong signature (%v) → %v, want (%v) → %v: build it with the guest SDK (wasmop/guest)",
				name, f.ParamTypes(), f.ResultTypes(), sig.params, sig.results)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return bad("missing exports %s: not a Sluice operator; import github.com/sluicehq/sluice/wasmop/guest and register the operator with guest.Register", strings.Join(missing, ", "))
	}
	if len(cm.ExportedMemories()) == 0 {
		return bad("exports no memory: the host passes records through the guest's linear memory")
	}
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod != hostModule && mod != "wasi_snapshot_preview1" {
			return bad("imports %s.%s: a guest may import only %q and wasi_snapshot_preview1", mod, name, hostModule)
		}
	}
	return nil
}

// CheckModule reports whether the file at path can run as a wasm
// operator, naming the manifest field ("module") in its *ModuleError: the
// file must exist, be WebAssembly and export the guest ABI. It compiles
// the module in a runtime of its own, so it needs no Host; a node checks
// with its Host's Load, which keeps what it compiled.
func CheckModule(ctx context.Context, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return &ModuleError{Path: path, Field: "module", Problem: "cannot read the file: give the path of a .wasm file present on every node that hosts wasm operators", Err: err}
	}
	if err := checkMagic(path, b); err != nil {
		return err
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, b)
	if err != nil {
		return &ModuleError{Path: path, Field: "module", Problem: "does not compile as WebAssembly: " + err.Error(), Err: err}
	}
	return checkABI(path, cm)
}
