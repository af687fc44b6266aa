package node

import (
	"context"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/wasmop"
)

// WasmConfig is the node's WebAssembly runtime settings (Config.Wasm):
// MemoryLimitPages, CallTimeout, CacheDir, PoolSize (wasmop.Config).
type WasmConfig = wasmop.Config

// wasmRuntime is a node's wasm runtime: its wasmop.Host, made when the
// first wasm operator is placed on the node, closed after the node
// stopped.
type wasmRuntime struct {
	cfg WasmConfig

	mu     sync.Mutex // guards host, closed
	host   *wasmop.Host
	closed bool
}

// factory is the core.MetaFactory of wasm operators: it loads (compiles,
// once per module) meta.Module and returns its operators' factory.
func (w *wasmRuntime) factory(meta core.Metadata) (core.Factory, error) {
	ctx := context.Background()
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil, wasmop.ErrClosed
	}
	if w.host == nil {
		h, err := wasmop.NewHost(ctx, w.cfg)
		if err != nil {
			w.mu.Unlock()
			return nil, fmt.Errorf("node: wasm runtime: %w", err)
		}
		w.host = h
	}
	h := w.host
	w.mu.Unlock()
	m, err := h.Load(ctx, meta.Module)
	if err != nil {
		return nil, err
	}
	return m.Factory(meta), nil
}

// close closes the Host, if one was made. It is safe to call twice.
func (w *wasmRuntime) close(ctx context.Context) error {
	w.mu.Lock()
	h := w.host
	w.closed = true
	w.mu.Unlock()
	if h == nil {
		return nil
	}
	return h.Close(ctx)
}
