// Package wasmop runs operators compiled to WebAssembly (WASI preview 1,
// e.g. Go's GOOS=wasip1 with the guest SDK in wasmop/guest) inside the
// node, on wazero (pure Go, no cgo).
//
// A node keeps one Host: a wazero runtime with WASI (clocks, random and
// stdout/stderr only: no filesystem, network or environment), the host
// module "sluice", a compilation cache, every module compiled so far
// (by content) and a pool of idle guest instances per module. A Module's
// Factory makes ordinary core.Operator values: each operator instance
// owns one guest instance from Init to Close.
//
// How a record passes: ProcessRecord writes the record's stream, key,
// value and headers into the input buffer the guest handed out
// (sluice_buffer, once, grown when a record is larger), then makes one
// call, sluice_process. The guest reads and writes state with host calls
// (state_get, state_set, state_delete, which go to the instance's State in
// the record's key group), sets timers (set_timer, delete_timer), reads
// the watermark, and buffers what it produces; the batch comes back in
// one emit call when the callback ends, and the host produces each record
// through the Context, so a failed attempt's output is discarded by the
// runtime as for any operator.
//
// Failures: a status "error" from the guest is an ordinary failure (the
// runtime restarts and retries, then dead-letters); "bad record" wraps
// core.ErrBadRecord (dead-lettered at once). A guest that traps (a Go
// panic), exits, runs past Config.CallTimeout (the call's context is
// cancelled and wazero, built WithCloseOnContextDone, stops it) or needs
// more than Config.MemoryLimitPages is dead: the error wraps
// ErrGuestFailed and core.ErrBadRecord, so the record is dead-lettered at
// once with the guest's panic message, and the operator starts a fresh
// guest instance (and its sluice_init) before its next call. The node is
// never affected.
//
//	h, _ := wasmop.NewHost(ctx, wasmop.Config{})
//	defer h.Close(ctx)
//	m, _ := h.Load(ctx, "wordcount.wasm")
//	rt, _ := node.Start(ctx, cfg, m.Factory(sdk.Metadata{Name: "wc",
//		Inputs: []sdk.Input{{Stream: "lines"}}, Outputs: []string{"counts"}}))
//
// The ABI is documented in docs/operator-protocol.md.
package wasmop
