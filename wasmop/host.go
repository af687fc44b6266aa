package wasmop

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Defaults for Config fields left zero.
const (
	// DefaultMemoryLimitPages is 1024 pages of 64 KiB: 64 MiB per guest
	// instance.
	DefaultMemoryLimitPages = 1024
	// DefaultCallTimeout bounds one guest call (a record, a timer, Init).
	DefaultCallTimeout = time.Second
	// DefaultPoolSize is how many idle guest instances of a module a Host
	// keeps for restarts.
	DefaultPoolSize = 4
)

// Config configures a Host. Zero fields take defaults.
type Config struct {
	// MemoryLimitPages caps each guest instance's linear memory, in
	// 64 KiB pages (wazero's RuntimeConfig.WithMemoryLimitPages); a guest
	// that needs more fails (its record is dead-lettered). 0 means
	// DefaultMemoryLimitPages.
	MemoryLimitPages uint32
	// CallTimeout bounds every guest call; a call past it is stopped
	// (wazero's WithCloseOnContextDone) and fails like a trap. 0 means
	// DefaultCallTimeout.
	CallTimeout time.Duration
	// CacheDir, if set, keeps wazero's compiled code on disk there, so a
	// restarted node does not compile its modules again; empty keeps it
	// in memory for the Host's life.
	CacheDir string
	// NoCallTimeout runs guest calls without a deadline: wazero then
	// neither compiles termination checks into the guest's code nor
	// watches each call's context (it starts a goroutine per call to do
	// so), which is most of what a call costs (make bench, group wasm:
	// an empty call adds about 1.9 µs with the deadline, 0.14 µs
	// without), but a guest that loops holds its operator instance for
	// ever. CallTimeout is then ignored.
	NoCallTimeout bool
	// PoolSize is how many idle guest instances per module the Host
	// keeps to hand to a restarted operator instance; 0 means
	// DefaultPoolSize, negative none.
	PoolSize int
}

// DefaultConfig returns the configuration with every default filled in.
func DefaultConfig() Config { return Config{}.withDefaults() }

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.MemoryLimitPages == 0 {
		c.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.PoolSize == 0 {
		c.PoolSize = DefaultPoolSize
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	switch {
	case c.MemoryLimitPages > 65536:
		return fmt.Errorf("wasmop: MemoryLimitPages: at most 65536 (4 GiB), got %d", c.MemoryLimitPages)
	case c.CallTimeout < 0:
		return fmt.Errorf("wasmop: CallTimeout: must be ≥ 0, got %v", c.CallTimeout)
	}
	return nil
}

// Host is one node's WebAssembly runtime: a wazero runtime with the WASI
// and "sluice" host modules, a compilation cache, the modules compiled so
// far (by content, so operators sharing a file share its code) and a pool
// of idle guest instances per module. It is safe for concurrent use; one
// Host serves every wasm operator of a node. Close it after the node's
// operators stopped.
type Host struct {
	cfg   Config
	rt    wazero.Runtime
	cache wazero.CompilationCache

	mu      sync.Mutex // guards modules, closed
	modules map[[sha256.Size]byte]*Module
	closed  bool
}

// NewHost creates a Host: the runtime, the WASI module (no filesystem, no
// network, no environment: only clocks, random and stdout/stderr, which
// go to the instance's error tail) and the "sluice" host module.
func NewHost(ctx context.Context, cfg Config) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	var cache wazero.CompilationCache
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasmop: compilation cache in %s: %w", cfg.CacheDir, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	rc := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(!cfg.NoCallTimeout).
		WithMemoryLimitPages(cfg.MemoryLimitPages).
		WithCompilationCache(cache)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	h := &Host{cfg: cfg, rt: rt, cache: cache, modules: make(map[[sha256.Size]byte]*Module)}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = h.close(ctx)
		return nil, fmt.Errorf("wasmop: instantiate WASI: %w", err)
	}
	if err := instantiateHostModule(ctx, rt); err != nil {
		_ = h.close(ctx)
		return nil, err
	}
	return h, nil
}

// Config returns the Host's configuration, defaults filled in.
func (h *Host) Config() Config { return h.cfg }

// Close releases every module and instance and the runtime. Operators of
// the Host must have stopped. It is safe to call twice.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	mods := h.modules
	h.modules = nil
	h.mu.Unlock()
	for _, m := range mods {
		m.drainPool(ctx)
	}
	return h.close(ctx)
}

// close closes the runtime and the cache.
func (h *Host) close(ctx context.Context) error {
	return errors.Join(h.rt.Close(ctx), h.cache.Close(ctx))
}

// Load reads, compiles and checks the module at path (see CheckModule's
// errors), or returns the module already compiled from the same bytes.
func (h *Host) Load(ctx context.Context, path string) (*Module, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ModuleError{Path: path, Field: "module", Problem: "cannot read the file: give the path of a .wasm file present on every node that hosts wasm operators", Err: err}
	}
	return h.compile(ctx, path, b)
}

// compile compiles b (from path) unless it was compiled before.
func (h *Host) compile(ctx context.Context, path string, b []byte) (*Module, error) {
	if err := checkMagic(path, b); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	if m := h.modules[sum]; m != nil {
		h.mu.Unlock()
		return m, nil
	}
	h.mu.Unlock()
	cm, err := h.rt.CompileModule(ctx, b)
	if err != nil {
		return nil, &ModuleError{Path: path, Field: "module", Problem: "does not compile as WebAssembly: " + err.Error(), Err: err}
	}
	if err := checkABI(path, cm); err != nil {
		_ = cm.Close(ctx)
		return nil, err
	}
	m := &Module{host: h, path: path, compiled: cm}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		_ = cm.Close(ctx)
		return nil, ErrClosed
	}
	if old := h.modules[sum]; old != nil { // compiled twice at once
		_ = cm.Close(ctx)
		return old, nil
	}
	h.modules[sum] = m
	return m, nil
}

// randSource is the guests' random source (WASI random_get).
var randSource = rand.Reader
