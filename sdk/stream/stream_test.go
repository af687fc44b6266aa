package stream_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/sdktest"
	"github.com/sluicehq/sluice/sdk/stream"
	"github.com/sluicehq/sluice/sdk/window"
)

// build builds p and fails the test on an error.
func build(t *testing.T, p *stream.Pipeline) []sdk.Factory {
	t.Helper()
	fs, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// graph builds p and runs it in an sdktest.Graph.
func graph(t *testing.T, p *stream.Pipeline) *sdktest.Graph {
	t.Helper()
	g, err := sdktest.NewGraph(build(t, p))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// metas returns the metadata of fs, with defaults.
func metas(fs []sdk.Factory) []sdk.Metadata {
	var ms []sdk.Metadata
	for _, f := range fs {
		ms = append(ms, f().Metadata().WithDefaults())
	}
	return ms
}

// TestStatelessStagesChainIntoOneOperator builds From, Map, Filter,
// FlatMap and Output: one operator reading the input and writing the
// output, named after the first stage, and no stream between the stages.
func TestStatelessStagesChainIntoOneOperator(t *testing.T) {
	p := stream.New("words")
	lines := stream.From(p, "lines", codec.String())
	lower := stream.Map(lines, "lower", strings.ToLower, codec.String())
	full := stream.Filter(lower, "non-empty", func(s string) bool { return strings.TrimSpace(s) != "" })
	words := stream.FlatMap(full, "split", func(s string, emit func(string)) {
		for _, w := range strings.Fields(s) {
			emit(w)
		}
	}, codec.String())
	lens := stream.Map(words, "length", func(w string) int64 { return int64(len(w)) }, codec.Int64())
	out := stream.Output(lens, "lengths")

	fs := build(t, p)
	ms := metas(fs)
	if len(ms) != 1 {
		t.Fatalf("got %d operators (%+v), want 1", len(ms), ms)
	}
	m := ms[0]
	if m.Name != "words.lower" || !slices.Equal(m.Inputs, []sdk.Input{{Stream: "lines", Routing: sdk.Shuffle}}) || !slices.Equal(m.Outputs, []string{"lengths"}) {
		t.Fatalf("got %+v, want words.lower reading lines (shuffle), writing lengths", m)
	}

	g, err := sdktest.NewGraph(fs)
	if err != nil {
		t.Fatal(err)
	}
	if err := lines.Send(g, "The quick", "   ", "brown FOX jumps"); err != nil {
		t.Fatal(err)
	}
	got, err := out.Take(g)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{3, 5, 5, 3, 5}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestFanOutAndUnchained: a stream read by two stages feeds both in one
// operator; Unchained and another parallelism start operators of their
// own, reading "<pipeline>.<stage before>".
func TestFanOutAndUnchained(t *testing.T) {
	p := stream.New("fan")
	in := stream.From(p, "in", codec.Int64())
	double := stream.Map(in, "double", func(n int64) int64 { return 2 * n }, codec.Int64())
	small := stream.Filter(double, "small", func(n int64) bool { return n < 10 })
	big := stream.Filter(double, "big", func(n int64) bool { return n >= 10 }, stream.Unchained())
	neg := stream.Map(double, "neg", func(n int64) int64 { return -n }, codec.Int64(), stream.Parallelism(3))
	outSmall := stream.Output(small, "small-out")
	outBig := stream.Output(big, "big-out")
	outNeg := stream.Output(neg, "neg-out")
	outAll := stream.Output(double, "all-out", stream.Unchained())

	fs := build(t, p)
	type op struct {
		name, in string
		outs     []string
		par      int
	}
	var got []op
	for _, m := range metas(fs) {
		got = append(got, op{m.Name, m.Inputs[0].Stream, m.Outputs, m.Parallelism})
	}
	want := []op{
		{"fan.double", "in", []string{"fan.double", "small-out"}, 1},
		{"fan.big", "fan.double", []string{"big-out"}, 1},
		{"fan.neg", "fan.double", []string{"neg-out"}, 3},
		{"fan.all-out", "fan.double", []string{"all-out"}, 1},
	}
	if !slices.EqualFunc(got, want, func(a, b op) bool {
		return a.name == b.name && a.in == b.in && slices.Equal(a.outs, b.outs) && a.par == b.par
	}) {
		t.Fatalf("got %+v, want %+v", got, want)
	}

	g, err := sdktest.NewGraph(fs)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Send(g, 1, 4, 7); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		out  *stream.Out[int64]
		want []int64
	}{{outSmall, []int64{2, 8}}, {outBig, []int64{14}}, {outNeg, []int64{-14, -8, -2}}, {outAll, []int64{2, 8, 14}}} {
		vs, err := c.out.Take(g)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(vs) // neg runs three instances
		if !slices.Equal(vs, c.want) {
			t.Errorf("%s: got %v, want %v", c.out.Stream(), vs, c.want)
		}
	}
}

// event is a JSON record of the tests.
type event struct {
	User  string `json:"user"`
	Count int64  `json:"count"`
}

// TestDecodeFailureFailsTheRecord: a record that does not decode fails
// its attempt with the codec's *DecodeError, naming operator, stage and
// stream; the records around it go through.
func TestDecodeFailureFailsTheRecord(t *testing.T) {
	p := stream.New("p")
	in := stream.From(p, "events", codec.JSON[event]())
	users := stream.Map(in, "user", func(e event) string { return e.User }, codec.String())
	out := stream.Output(users, "users")
	g := graph(t, p)

	if err := in.Send(g, event{User: "ann"}); err != nil {
		t.Fatal(err)
	}
	err := g.Send("events", sdk.Record{Value: []byte(`{"user": 7}`)})
	var de *codec.DecodeError
	if !errors.As(err, &de) || de.Codec != "json" {
		t.Fatalf("got %v, want a json *codec.DecodeError", err)
	}
	if want := `stream: operator "p.user", stage "user": decode a record of "events": codec: decode 11 bytes of json into stream_test.event`; !strings.Contains(err.Error(), want) {
		t.Fatalf("got %q, want it to contain %q", err, want)
	}
	if err := in.Send(g, event{User: "bob"}); err != nil {
		t.Fatal(err)
	}
	got, err := out.Take(g)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ann", "bob"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestDecodeFailureIsDeadLettered runs a pipeline in the runtime: a
// record that does not decode goes to "<operator>.deadletter" at once (no
// retry: the restart policy would allow two attempts) with the codec's
// message in its sluice-error header, and the next one is processed.
func TestDecodeFailureIsDeadLettered(t *testing.T) {
	p := stream.New("dl")
	in := stream.From(p, "dl-events", codec.JSON[event]())
	counts := stream.Map(in, "count", func(e event) int64 { return e.Count }, codec.Int64(),
		stream.Restart(sdk.RestartPolicy{DeadLetterAfter: 2, InitialBackoff: time.Millisecond}))
	out := stream.Output(counts, "dl-counts")
	ctx, rt := start(t, build(t, p))
	dead, err := rt.Subscribe(ctx, sdk.DeadLetterStream("dl.count"))
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	results, err := rt.Subscribe(ctx, out.Stream())
	if err != nil {
		t.Fatal(err)
	}
	defer results.Close()

	if err := rt.Produce(ctx, in.Stream(), sdk.Record{Key: []byte("bad"), Value: []byte(`{"count": "x"}`)}); err != nil {
		t.Fatal(err)
	}
	good, err := in.Record(event{Count: 42})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Produce(ctx, in.Stream(), good); err != nil {
		t.Fatal(err)
	}

	dl, err := dead.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reason, _ := dl.Header(sdk.HeaderError)
	want := `stream: operator "dl.count", stage "count": decode a record of "dl-events": codec: decode 14 bytes of json into stream_test.event: `
	if string(dl.Key) != "bad" || !strings.HasPrefix(reason, want) {
		t.Fatalf("dead letter %q: error %q, want it to start with %q", dl.Key, reason, want)
	}
	if n, _ := dl.Header(sdk.HeaderAttempts); n != "1" {
		t.Errorf("dead letter after %s attempts, want 1: no retry cures a record that does not decode", n)
	}
	rec, err := results.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := out.Decode(rec); err != nil || n != 42 {
		t.Fatalf("got %d, %v, want 42", n, err)
	}
}

// TestBuildRefusesBadPipelines: each bad pipeline is refused by Build
// with the sentinel and the stage's name.
func TestBuildRefusesBadPipelines(t *testing.T) {
	id := func(s string) string { return s }
	twoOutputs := func() sdk.Operator { return &source{outs: []string{"a", "b"}} }
	for _, c := range []struct {
		name  string
		build func(p *stream.Pipeline)
		err   error
		stage string // "" for no stage
	}{
		{"empty", func(*stream.Pipeline) {}, stream.ErrEmpty, ""},
		{"unconsumed", func(p *stream.Pipeline) {
			in := stream.From(p, "in", codec.String())
			stream.Output(in, "out")
			stream.Map(in, "dangling", id, codec.String())
		}, stream.ErrUnconsumed, "dangling"},
		{"unconsumed from", func(p *stream.Pipeline) {
			stream.From(p, "in", codec.String())
		}, stream.ErrUnconsumed, "in"},
		{"same name twice", func(p *stream.Pipeline) {
			in := stream.From(p, "in", codec.String())
			a := stream.Map(in, "m", id, codec.String())
			stream.Output(stream.Map(a, "m", id, codec.String()), "out")
		}, stream.ErrDuplicate, "m"},
		{"two stages write one stream", func(p *stream.Pipeline) {
			in := stream.From(p, "in", codec.String())
			stream.Output(stream.Map(in, "a", id, codec.String()), "out")
			stream.To(stream.Map(in, "b", id, codec.String()), "sink", func() sdk.Operator { return &sink{in: "out"} })
		}, stream.ErrDuplicate, "b"},
		{"nil function", func(p *stream.Pipeline) {
			stream.Output(stream.Map[string, string](stream.From(p, "in", codec.String()), "m", nil, codec.String()), "out")
		}, stream.ErrInvalid, "m"},
		{"nil codec", func(p *stream.Pipeline) {
			stream.Output(stream.Map(stream.From(p, "in", codec.String()), "m", id, codec.Codec[string]{}), "out")
		}, stream.ErrInvalid, "m"},
		{"bad name", func(p *stream.Pipeline) {
			stream.Output(stream.Map(stream.From(p, "in", codec.String()), "a/b", id, codec.String()), "out")
		}, stream.ErrInvalid, "a/b"},
		{"cycle by Output", func(p *stream.Pipeline) {
			stream.Output(stream.Map(stream.From(p, "in", codec.String()), "m", id, codec.String()), "in")
		}, stream.ErrInvalid, "in"},
		{"cycle by To", func(p *stream.Pipeline) {
			stream.To(stream.Map(stream.From(p, "in", codec.String()), "m", id, codec.String()), "sink", func() sdk.Operator { return &sink{in: "in"} })
		}, stream.ErrInvalid, "in"},
		{"two sinks of one name", func(p *stream.Pipeline) {
			in := stream.From(p, "in", codec.String())
			stream.To(stream.Map(in, "a", id, codec.String()), "to-a", func() sdk.Operator { return &sink{in: "x"} })
			stream.To(in, "to-b", func() sdk.Operator { return &sink{in: "x"} })
		}, stream.ErrDuplicate, "to-b"},
		{"cycle through a window", func(p *stream.Pipeline) {
			k := stream.KeyBy(stream.From(p, "in", codec.String()), "key", id, codec.String())
			stream.To(stream.Aggregate(k, "agg", window.Global(), stream.Count[string](), codec.Int64()), "sink", func() sdk.Operator { return &sink{in: "in"} })
		}, stream.ErrInvalid, "in"},
		{"source with two outputs", func(p *stream.Pipeline) {
			stream.Output(stream.FromSource(p, "src", twoOutputs, codec.String()), "out")
		}, stream.ErrInvalid, "src"},
		{"window option on Map", func(p *stream.Pipeline) {
			stream.Output(stream.Map(stream.From(p, "in", codec.String()), "m", id, codec.String(), stream.Lateness(time.Second)), "out")
		}, stream.ErrInvalid, "m"},
		{"bad parallelism", func(p *stream.Pipeline) {
			stream.Output(stream.Map(stream.From(p, "in", codec.String()), "m", id, codec.String(), stream.Parallelism(-1)), "out")
		}, nil, "m"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := stream.New("bad")
			c.build(p)
			fs, err := p.Build()
			if err == nil {
				t.Fatalf("built %d operators, want an error", len(fs))
			}
			if c.err != nil && !errors.Is(err, c.err) {
				t.Fatalf("got %v, want %v", err, c.err)
			}
			if c.stage == "" {
				return
			}
			var se *stream.StageError
			if !errors.As(err, &se) || se.Stage != c.stage || !strings.Contains(err.Error(), `stage "`+c.stage+`"`) {
				t.Fatalf("got %v, want a *StageError naming stage %q", err, c.stage)
			}
		})
	}
}

// TestBuildOnce: a second Build returns the first result; a stage added
// after it is refused, without changing what the first Build returned.
func TestBuildOnce(t *testing.T) {
	p := stream.New("once")
	in := stream.From(p, "in", codec.String())
	stream.Output(in, "out")
	fs := build(t, p)
	if fs2, err := p.Build(); err != nil || len(fs2) != len(fs) {
		t.Fatalf("second Build: %d operators, %v; want %d, nil", len(fs2), err, len(fs))
	}
	stream.Output(in, "late")
	if _, err := p.Build(); !errors.Is(err, stream.ErrBuilt) || !strings.Contains(err.Error(), `stage "late"`) {
		t.Fatalf("Build after a stage was added: got %v, want ErrBuilt naming stage late", err)
	}
	if outs := fs[0]().Metadata().Outputs; !slices.Equal(outs, []string{"out"}) {
		t.Fatalf("first Build's operator writes %v now, want [out]", outs)
	}
}

// TestSourceAndSink: FromSource and To take operators as they are, the
// stream between them named by theirs.
func TestSourceAndSink(t *testing.T) {
	p := stream.New("io")
	in := stream.FromSource(p, "numbers", func() sdk.Operator { return &source{outs: []string{"nums"}, n: 5} }, codec.Int64())
	sq := stream.Map(in, "square", func(n int64) int64 { return n * n }, codec.Int64())
	out := stream.To(sq, "store", func() sdk.Operator { return &sink{in: "squares"} })
	fs := build(t, p)
	got := shapes(fs)
	if want := []string{"numbers( → nums)", "sink-squares(squares/shuffle → )", "io.square(nums/shuffle → squares)"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	g, err := sdktest.NewGraph(fs)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.RunSources(10); err != nil {
		t.Fatal(err)
	}
	squares, err := out.Take(g)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, 1, 4, 9, 16}; !slices.Equal(squares, want) || out.Stream() != "squares" {
		t.Fatalf("got %v on %q, want %v on squares", squares, out.Stream(), want)
	}
}

// counting wraps c, counting its Encode and Decode calls.
func counting[T any](c codec.Codec[T], enc, dec *int) codec.Codec[T] {
	return codec.Codec[T]{Name: c.Name,
		Encode: func(dst []byte, v T) ([]byte, error) { *enc++; return c.Encode(dst, v) },
		Decode: func(b []byte) (T, error) { *dec++; return c.Decode(b) },
	}
}

// TestChainedStagesDoNotEncode: in a chain, values pass as Go values: a
// record is decoded once where it enters the operator and encoded once
// where it leaves; the codecs of the stages inside are not called.
func TestChainedStagesDoNotEncode(t *testing.T) {
	var inEnc, inDec, midEnc, midDec, outEnc, outDec int
	p := stream.New("calls")
	in := stream.From(p, "in", counting(codec.Int64(), &inEnc, &inDec))
	mid := stream.Map(in, "plus", func(n int64) int64 { return n + 1 }, counting(codec.Int64(), &midEnc, &midDec))
	odd := stream.Filter(mid, "odd", func(n int64) bool { return n%2 == 1 })
	out := stream.Output(stream.Map(odd, "times", func(n int64) int64 { return 10 * n }, counting(codec.Int64(), &outEnc, &outDec)), "out")
	g := graph(t, p)
	if err := in.Send(g, 0, 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	inEnc = 0 // Send's
	got, err := out.Take(g)
	if err != nil || !slices.Equal(got, []int64{10, 30}) {
		t.Fatalf("got %v, %v, want [10 30]", got, err)
	}
	if inDec != 4 || inEnc != 0 || midEnc+midDec != 0 || outEnc != 2 || outDec != 2 { // outDec: Take's
		t.Fatalf("calls: in %d/%d, mid %d/%d, out %d/%d (encode/decode), want 0/4, 0/0, 2/2", inEnc, inDec, midEnc, midDec, outEnc, outDec)
	}
}
