package stream_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/sdktest"
	"github.com/sluicehq/sluice/sdk/stream"
)

// TestKeyByChainsAndKeysRecords: KeyBy after Map runs in Map's operator
// and writes records keyed by the encoded key; after From it starts an
// operator of its own.
func TestKeyByChainsAndKeysRecords(t *testing.T) {
	p := stream.New("k")
	in := stream.From(p, "events", codec.JSON[event]())
	norm := stream.Map(in, "norm", func(e event) event { e.User = strings.ToLower(e.User); return e }, codec.JSON[event]())
	byUser := stream.KeyBy(norm, "by-user", func(e event) string { return e.User }, codec.String())
	out := stream.OutputKeyed(byUser, "events-by-user")
	byCount := stream.KeyBy(in, "by-count", func(e event) int64 { return e.Count }, codec.Int64())
	outCount := stream.OutputKeyed(byCount, "events-by-count")

	fs := build(t, p)
	got := shapes(fs)
	if want := []string{"k.norm(events/shuffle → events-by-user)", "k.by-count(events/shuffle → events-by-count)"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}

	g, err := sdktest.NewGraph(fs)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Send(g, event{User: "Ann", Count: 1}, event{User: "BOB", Count: 2}); err != nil {
		t.Fatal(err)
	}
	recs := g.Output("events-by-user")
	if len(recs) != 2 || string(recs[0].Key) != "ann" || string(recs[0].Value) != `{"user":"ann","count":1}` {
		t.Fatalf("records %q, want key ann and its event as JSON first", recs)
	}
	kvs, err := out.Take(g)
	if err != nil {
		t.Fatal(err)
	}
	want := []stream.KV[string, event]{{Key: "ann", Value: event{User: "ann", Count: 1}}, {Key: "bob", Value: event{User: "bob", Count: 2}}}
	if !slices.Equal(kvs, want) {
		t.Fatalf("got %v, want %v", kvs, want)
	}
	byN, err := outCount.Take(g)
	if err != nil {
		t.Fatal(err)
	}
	if len(byN) != 2 || byN[0].Key != 1 || byN[1].Key != 2 || byN[1].Value.User != "BOB" {
		t.Fatalf("got %v, want keys 1 and 2", byN)
	}
}

// TestToKeyedTakesTheSinksStream: ToKeyed writes the sink's input stream.
func TestToKeyedTakesTheSinksStream(t *testing.T) {
	p := stream.New("tk")
	in := stream.From(p, "in", codec.String())
	k := stream.KeyBy(stream.Map(in, "up", strings.ToUpper, codec.String()), "key", func(s string) string { return s[:1] }, codec.String())
	out := stream.ToKeyed(k, "store", func() sdk.Operator { return &sink{in: "keyed"} })
	fs := build(t, p)
	if got := shape(metas(fs)[1]); got != "tk.up(in/shuffle → keyed)" {
		t.Fatalf("got %s", got)
	}
	g, err := sdktest.NewGraph(fs)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Send(g, "ab", "cd"); err != nil {
		t.Fatal(err)
	}
	kvs, err := out.Take(g)
	if err != nil {
		t.Fatal(err)
	}
	if want := []stream.KV[string, string]{{Key: "A", Value: "AB"}, {Key: "C", Value: "CD"}}; !slices.Equal(kvs, want) || out.Stream() != "keyed" {
		t.Fatalf("got %v on %q, want %v on keyed", kvs, out.Stream(), want)
	}
}
