package wasmop

import "unsafe"

// stringBytes returns s's bytes without a copy; they must not be
// modified (they are only copied into guest memory).
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
