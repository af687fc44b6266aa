package stream_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/sdktest"
	"github.com/sluicehq/sluice/sdk/stream"
)

// TestValueIsPerKey: a stream.Value holds one value per key, even for
// keys of one key group (a single key group here), where a state.Value
// would be shared.
func TestValueIsPerKey(t *testing.T) {
	total := stream.NewValue("total", codec.Int64())
	p := stream.New("perkey")
	words := stream.From(p, "perkey-words", codec.String())
	byWord := stream.KeyBy(words, "by-word", strings.ToLower, codec.String(), stream.KeyGroups(1))
	counted := stream.Process(byWord, "count", stream.Processor[string, string, string]{
		Record: func(ctx *stream.Context[string, string], w, _ string) error {
			n, _, err := total.Get(ctx)
			if err != nil {
				return err
			}
			if err := total.Set(ctx, n+1); err != nil {
				return err
			}
			if n+1 == 3 {
				if err := total.Clear(ctx); err != nil { // starts over
					return err
				}
			}
			return ctx.Emit(w + "=" + strings.Repeat("I", int(n+1)))
		},
	}, codec.String(), stream.KeyGroups(1))
	out := stream.Output(counted, "perkey-out")
	g, err := sdktest.NewGraph(build(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if err := words.Send(g, "a", "B", "b", "A", "a", "a", "c"); err != nil {
		t.Fatal(err)
	}
	got, err := out.Take(g)
	if err != nil {
		t.Fatal(err)
	}
	want := "a=I b=I b=II a=II a=III a=I c=I"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}
