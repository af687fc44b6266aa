//go:build wasip1

// Command keycount is the keyed counter of the benchmark's word count
// (internal/bench, group wasm) as a wasm operator: it counts each record's
// key in state and produces key → the new count, 8 bytes big-endian (as
// sdk.Int64Bytes), to "counts", the same work as the native counter.
package main

import (
	"encoding/binary"

	"github.com/sluicehq/sluice/wasmop/guest"
)

// counter counts keys.
type counter struct{ num [8]byte }

// ProcessRecord counts rec's key.
func (c *counter) ProcessRecord(ctx *guest.Context, rec guest.Record) error {
	n := guest.GetInt64(ctx, rec.Key) + 1
	guest.PutInt64(ctx, rec.Key, n)
	binary.BigEndian.PutUint64(c.num[:], uint64(n))
	ctx.Produce("counts", rec.Key, c.num[:])
	return nil
}

func init() { guest.Register(&counter{}) }

func main() {}
