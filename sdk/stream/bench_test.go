package stream_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/stream"
)

// produceCounter is an sdk.Context that only counts Produce calls (all a
// chain's operator calls); its other methods are not implemented.
type produceCounter struct {
	sdk.Context
	n int
}

func (c *produceCounter) Produce(string, sdk.Record) error { c.n++; return nil }

// handChain is the chain of BenchmarkChain written by hand: decode, add
// one, keep odd numbers, times ten, encode (into a slice of its own, as
// a record's bytes must be), produce.
type handChain struct{}

var int64Codec = codec.Int64()

func (handChain) Metadata() sdk.Metadata                            { return sdk.Metadata{Name: "hand"} }
func (handChain) Init(sdk.Context) error                            { return nil }
func (handChain) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
func (handChain) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	c := int64Codec
	n, err := c.Decode(rec.Value)
	if err != nil {
		return err
	}
	if n++; n%2 != 1 {
		return nil
	}
	v, err := c.Encode(nil, 10*n)
	if err != nil {
		return err
	}
	return ctx.Produce("out", sdk.Record{Value: v})
}

// BenchmarkChain runs records through the operator of From → Map →
// Filter → Map → Output, against the same written by hand.
func BenchmarkChain(b *testing.B) {
	p := stream.New("bench")
	in := stream.From(p, "in", codec.Int64())
	odd := stream.Filter(stream.Map(in, "plus", func(n int64) int64 { return n + 1 }, codec.Int64()), "odd", func(n int64) bool { return n%2 == 1 })
	stream.Output(stream.Map(odd, "times", func(n int64) int64 { return 10 * n }, codec.Int64()), "out")
	fs, err := p.Build()
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]sdk.Record, 1024)
	for i := range recs {
		recs[i], _ = in.Record(int64(i))
	}
	for _, c := range []struct {
		name string
		op   sdk.Operator
	}{{"typed", fs[0]()}, {"hand", handChain{}}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := &produceCounter{}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := c.op.ProcessRecord(ctx, recs[i%len(recs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
