package stream_test

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/state"
	"github.com/sluicehq/sluice/sdk/stream"
)

func numbers(count int64) sdk.Factory {
	return func() sdk.Operator {
		return &generate.Source{Name: "numbers", Stream: "numbers", Count: count, End: true,
			Make: func(i int64, _ *rand.Rand) sdk.Record { return sdk.Record{Value: strconv.AppendInt(nil, i, 10)} }}
	}
}

// replayable is a source the chain cannot stand for (sdk.Replayable).
type replayable struct{ *generate.Source }

func (replayable) Position() any                                     { return nil }
func (replayable) Durable(sdk.Context, any)                          {}
func (replayable) Rewind(sdk.Context) error                          { return nil }
func (r replayable) Metadata() sdk.Metadata                          { return r.Source.Metadata() }
func (replayable) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// TestStagesChainIntoTheirSource: a Map and KeyBy right after a FromSource
// of bytes run in the source's operator (its name, no stream in between),
// and the pipeline counts exactly under the default exactly-once (the
// chained source is still Resumable); a source read with a codec that can
// fail, or one that is Replayable, keeps its own operator.
func TestStagesChainIntoTheirSource(t *testing.T) {
	const n = 3000
	counts := state.NewMap("n", codec.Int64(), codec.Int64())
	p := stream.New("chained")
	nums := stream.FromSource(p, "numbers", numbers(n), codec.Bytes())
	parsed := stream.Map(nums, "parse", func(b []byte) int64 { v, _ := strconv.ParseInt(string(b), 10, 64); return v }, codec.Int64())
	byMod := stream.KeyBy(parsed, "by-mod", func(v int64) int64 { return v % 10 }, codec.Int64())
	counted := stream.Process(byMod, "count", stream.Processor[int64, int64, int64]{
		Record: func(ctx *stream.Context[int64, int64], k, _ int64) error {
			c, _, err := counts.Get(ctx.State(), k)
			if err != nil {
				return err
			}
			if err := counts.Put(ctx.State(), k, c+1); err != nil {
				return err
			}
			return ctx.Emit(k*1_000_000 + c + 1)
		},
	}, codec.Int64())
	out := stream.Output(counted, "chained-counts")
	fs := build(t, p)
	metas := map[string]sdk.Metadata{}
	for _, f := range fs {
		m := f().Metadata()
		metas[m.Name] = m
	}
	if len(fs) != 2 || len(metas["numbers"].Outputs) != 1 || metas["numbers"].Outputs[0] != "chained.by-mod" {
		t.Fatalf("operators %v: want the source, writing chained.by-mod, and the count", metas)
	}
	if _, ok := fs[0]().(sdk.Resumable); !ok {
		if _, ok := fs[1]().(sdk.Resumable); !ok {
			t.Fatal("the chained source is not Resumable")
		}
	}
	ctx, rt := start(t, fs)
	sub, err := rt.Subscribe(ctx, out.Stream())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	last := map[int64]int64{}
	for seen := 0; seen < n; seen++ {
		rec, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("after %d results: %v", seen, err)
		}
		v, err := out.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		last[v/1_000_000] = max(last[v/1_000_000], v%1_000_000)
	}
	for k := range int64(10) {
		if last[k] != n/10 {
			t.Fatalf("key %d counted %d, want %d (all: %v)", k, last[k], n/10, last)
		}
	}

	for _, tc := range []struct {
		name string
		src  sdk.Factory
		c    codec.Codec[[]byte]
	}{
		{"a codec that can fail", numbers(1), codec.Codec[[]byte]{Name: "strict", Encode: codec.Bytes().Encode, Decode: codec.Bytes().Decode}},
		{"a Replayable source", func() sdk.Operator { return replayable{numbers(1)().(*generate.Source)} }, codec.Bytes()},
	} {
		p := stream.New("apart")
		s := stream.FromSource(p, "numbers", tc.src, tc.c)
		stream.Output(stream.Map(s, "upper", func(b []byte) []byte { return b }, codec.Bytes()), "apart-out")
		fs := build(t, p)
		if len(fs) != 2 {
			t.Fatalf("%s: %d operators, want the source and the map apart", tc.name, len(fs))
		}
	}
}
