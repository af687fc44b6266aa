package core

import "fmt"

// Runtime says what runs an operator's code (Metadata.Runtime).
type Runtime string

// Runtimes. The zero value means RuntimeGo.
const (
	// RuntimeGo is a kind compiled into the node's program (the default).
	RuntimeGo Runtime = "go"
	// RuntimeWasm is a WebAssembly module (Metadata.Module) run in the
	// node by package wasmop, under the built-in kind WasmKind.
	RuntimeWasm Runtime = "wasm"
)

// WasmKind is the kind of every wasm operator: a node that runs wasm
// operators announces it, and makes each operator's factory from its
// deployed metadata (MetaFactory) rather than from code.
const WasmKind = "sluice.wasm"

// String returns the runtime's name as used in manifests; unset is "go".
func (r Runtime) String() string {
	if r == "" {
		return string(RuntimeGo)
	}
	return string(r)
}

// ParseRuntime parses a manifest's runtime ("go", "wasm"; "" for go).
func ParseRuntime(s string) (Runtime, error) {
	switch s {
	case "", string(RuntimeGo):
		return RuntimeGo, nil
	case string(RuntimeWasm):
		return RuntimeWasm, nil
	}
	return "", fmt.Errorf("unknown runtime %q: want go (a kind compiled into the node) or wasm (a WebAssembly module named by module)", s)
}

// MetaFactory makes the factory of an operator from its deployed
// metadata, for runtimes whose operators are data rather than code (a
// wasm module). It is called once per operator on a node; an error
// leaves the operator unplaced there (logged).
type MetaFactory func(meta Metadata) (Factory, error)
