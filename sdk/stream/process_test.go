package stream_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/sdktest"
	"github.com/sluicehq/sluice/sdk/state"
	"github.com/sluicehq/sluice/sdk/stream"
)

// WordCount is a word's running count.
type WordCount struct {
	Word string `json:"word"`
	N    int64  `json:"n"`
}

// seen is the word count's state: the count of each word.
var seen = state.NewMap("seen", codec.String(), codec.Int64())

// wordCount is the word count on the typed API: sentences split into
// words (chained), keyed by word, counted in state by Process (4
// instances), the counts formatted by a Map chained to Process.
func wordCount() (*stream.Pipeline, *stream.Stream[string], *stream.Out[WordCount], *stream.Out[string]) {
	p := stream.New("wc")
	lines := stream.From(p, "sentences", codec.String())
	words := stream.FlatMap(lines, "split", func(l string, emit func(string)) {
		for _, w := range strings.Fields(l) {
			emit(w)
		}
	}, codec.String())
	byWord := stream.KeyBy(words, "by-word", func(w string) string { return w }, codec.String())
	counts := stream.Process(byWord, "count", stream.Processor[string, string, WordCount]{
		Record: func(ctx *stream.Context[string, WordCount], w string, _ string) error {
			n, _, err := seen.Get(ctx.State(), w)
			if err != nil {
				return err
			}
			if err := seen.Put(ctx.State(), w, n+1); err != nil {
				return err
			}
			return ctx.Emit(WordCount{Word: w, N: n + 1})
		},
	}, codec.JSON[WordCount](), stream.Parallelism(4))
	text := stream.Map(counts, "text", func(c WordCount) string { return fmt.Sprintf("%s=%d", c.Word, c.N) }, codec.String())
	return p, lines, stream.Output(counts, "counts"), stream.Output(text, "count-text")
}

// TestWordCountIsExact runs the typed word count in sdktest with random
// sentences: every word's counts are 1, 2, … n in order, n its number of
// occurrences, on one instance.
func TestWordCountIsExact(t *testing.T) {
	p, lines, counts, text := wordCount()
	fs := build(t, p)
	if got, want := shapes(fs), []string{
		"wc.split(sentences/shuffle → wc.by-word)",
		"wc.count(wc.by-word/group-by → counts,count-text)",
	}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	g, err := sdktest.NewGraph(fs)
	if err != nil {
		t.Fatal(err)
	}
	corpus := strings.Fields("the quick brown fox jumps over the lazy dog while the cat sleeps")
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[string]int64{}
	var sentences []string
	for range 500 {
		ws := make([]string, 1+rng.IntN(8))
		for i := range ws {
			ws[i] = corpus[rng.IntN(len(corpus))]
			want[ws[i]]++
		}
		sentences = append(sentences, strings.Join(ws, " "))
	}
	if err := lines.Send(g, sentences...); err != nil {
		t.Fatal(err)
	}
	got, err := counts.Take(g)
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]int64{}
	for _, c := range got {
		if c.N != last[c.Word]+1 {
			t.Fatalf("%q counted %d after %d", c.Word, c.N, last[c.Word])
		}
		last[c.Word] = c.N
	}
	if len(last) != len(want) {
		t.Fatalf("%d words counted, want %d", len(last), len(want))
	}
	for w, n := range want {
		if last[w] != n {
			t.Errorf("%q counted %d, want %d", w, last[w], n)
		}
	}
	texts, err := text.Take(g)
	if err != nil || len(texts) != len(got) || texts[0] != fmt.Sprintf("%s=%d", got[0].Word, got[0].N) {
		t.Fatalf("text: %d values (%v), want %d starting %v", len(texts), err, len(got), got[0])
	}
}

// TestProcessTimers: named timers of both kinds fire per key, with the
// key and name, in the key's state; a timer set again replaces it.
func TestProcessTimers(t *testing.T) {
	type total struct {
		Key   string
		Timer string
		N     int64
	}
	counts := state.NewMap("n", codec.String(), codec.Int64())
	p := stream.New("t")
	in := stream.From(p, "in", codec.String())
	k := stream.KeyBy(in, "key", func(s string) string { return s }, codec.String())
	flush := func(ctx *stream.Context[string, total], key, timer string, _ time.Time) error {
		n, _, err := counts.Get(ctx.State(), key)
		if err != nil {
			return err
		}
		if err := counts.Delete(ctx.State(), key); err != nil {
			return err
		}
		return ctx.Emit(total{Key: key, Timer: timer, N: n})
	}
	out := stream.Output(stream.Process(k, "totals", stream.Processor[string, string, total]{
		Record: func(ctx *stream.Context[string, total], key, _ string) error {
			n, _, err := counts.Get(ctx.State(), key)
			if err != nil {
				return err
			}
			if err := counts.Put(ctx.State(), key, n+1); err != nil {
				return err
			}
			if key == "slow" {
				return ctx.SetTimer("later", sdktest.Start.Add(time.Minute))
			}
			return ctx.SetEventTimer("quiet", ctx.EventTime().Add(5*time.Second)) // 5 s after the key's last value
		},
		Timer:      flush,
		EventTimer: flush,
	}, codec.JSON[total](), stream.Parallelism(2)), "all-totals")
	g := graph(t, p)

	sendWords(t, g, in, "a@1", "b@2", "a@4", "slow@4", "slow@5")
	if err := g.AdvanceWatermark(at(8)); err != nil { // b's timer (7 s) is due, a's (9 s) not
		t.Fatal(err)
	}
	step := func(what string, want ...total) {
		t.Helper()
		got, err := out.Take(g)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
	step("watermark 8 s", total{"b", "quiet", 1})
	if err := g.AdvanceWatermark(at(9)); err != nil {
		t.Fatal(err)
	}
	step("watermark 9 s", total{"a", "quiet", 2})
	if err := g.AdvanceTime(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	step("processing time +2 min", total{"slow", "later", 2})
}

// TestProcessWithoutTimerFunc: a timer set without its function fails
// the record with ErrNoTimerFunc.
func TestProcessWithoutTimerFunc(t *testing.T) {
	p := stream.New("nt")
	in := stream.From(p, "in", codec.String())
	k := stream.KeyBy(in, "key", func(s string) string { return s }, codec.String())
	stream.Output(stream.Process(k, "proc", stream.Processor[string, string, string]{
		Record: func(ctx *stream.Context[string, string], key, _ string) error {
			return ctx.SetEventTimer("x", ctx.EventTime())
		},
	}, codec.String()), "out")
	g := graph(t, p)
	if err := in.Send(g, "k"); !errors.Is(err, stream.ErrNoTimerFunc) {
		t.Fatalf("got %v, want ErrNoTimerFunc", err)
	}
}

// TestWordCountInTheRuntime runs the typed word count with node.Start:
// its two operators, four count instances, exact counts.
func TestWordCountInTheRuntime(t *testing.T) {
	p, lines, counts, text := wordCount()
	ctx, rt := start(t, build(t, p))
	sub, err := rt.Subscribe(ctx, counts.Stream())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	texts, err := rt.Subscribe(ctx, text.Stream()) // a stream without a reader holds the checkpoints back
	if err != nil {
		t.Fatal(err)
	}
	defer texts.Close()

	want := map[string]int64{}
	total := 0
	rng := rand.New(rand.NewPCG(3, 4))
	corpus := strings.Fields("a b c d e f g h")
	for range 200 {
		ws := make([]string, 1+rng.IntN(5))
		for i := range ws {
			ws[i] = corpus[rng.IntN(len(corpus))]
			want[ws[i]]++
		}
		total += len(ws)
		rec, err := lines.Record(strings.Join(ws, " "))
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Produce(ctx, lines.Stream(), rec); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]int64{}
	for range total {
		rec, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c, err := counts.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		if c.N != got[c.Word]+1 {
			t.Fatalf("%q counted %d after %d", c.Word, c.N, got[c.Word])
		}
		got[c.Word] = c.N
	}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for range total {
		if _, err := texts.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
