//go:build wasip1

// Command wordcount is the sample wasm operator: it splits each record's
// value into words and counts each word, keeping the counts in state and
// producing "word" → count (decimal) to the stream "counts". Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o wordcount.wasm ./wasmop/examples/wordcount
package main

import (
	"bytes"
	"strconv"

	"github.com/sluicehq/sluice/wasmop/guest"
)

// counter counts words.
type counter struct{ num []byte }

// ProcessRecord counts the words of rec's value.
func (c *counter) ProcessRecord(ctx *guest.Context, rec guest.Record) error {
	for _, w := range bytes.Fields(rec.Value) {
		n := guest.GetInt64(ctx, w) + 1
		guest.PutInt64(ctx, w, n)
		c.num = strconv.AppendInt(c.num[:0], n, 10)
		ctx.Produce("counts", w, c.num)
	}
	return nil
}

func init() { guest.Register(&counter{}) }

func main() {}
