package wasmtest

import "runtime"

// runtimeGOROOT returns the GOROOT of the toolchain that built the test,
// whose go command builds the guest.
func runtimeGOROOT() string { return runtime.GOROOT() } //nolint:staticcheck // the toolchain of this binary is the one wanted
