package stream_test

import (
	"errors"
	"fmt"
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

// at is sdktest.Start plus sec seconds.
func at(sec int) time.Time { return sdktest.Start.Add(time.Duration(sec) * time.Second) }

// sendWords sends each "word@second" to in at that event time.
func sendWords(t *testing.T, g *sdktest.Graph, in *stream.Stream[string], words ...string) {
	t.Helper()
	for _, w := range words {
		word, sec, _ := strings.Cut(w, "@")
		var n int
		fmt.Sscan(sec, &n)
		if err := in.SendAt(g, at(n), word); err != nil {
			t.Fatal(err)
		}
	}
}

// describe prints windowed results as "key@start=value", sorted.
func describe[K, R any](ws []stream.Windowed[K, R]) []string {
	var s []string
	for _, w := range ws {
		s = append(s, fmt.Sprintf("%v@%v=%v", w.Key, w.Start.Sub(sdktest.Start), w.Value))
	}
	slices.Sort(s)
	return s
}

// TestWindowedCountIsExact counts words in tumbling windows: KeyBy after
// From is an operator, Aggregate the window operator writing the Output's
// stream itself.
func TestWindowedCountIsExact(t *testing.T) {
	p := stream.New("w")
	words := stream.From(p, "words", codec.String())
	byWord := stream.KeyBy(words, "by-word", func(w string) string { return w }, codec.String())
	counts := stream.Aggregate(byWord, "count", window.Tumbling(10*time.Second), stream.Count[string](), codec.Int64(), stream.Parallelism(3))
	out := stream.Output(counts, "counts")

	fs := build(t, p)
	got := shapes(fs)
	if want := []string{"w.by-word(words/shuffle → w.by-word)", "w.count(w.by-word/group-by → counts,w.count.late)"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	g, err := sdktest.NewGraph(fs)
	if err != nil {
		t.Fatal(err)
	}
	sendWords(t, g, words, "fox@1", "dog@2", "fox@9", "fox@11", "cat@19", "dog@25", "dog@29")
	if err := g.End(); err != nil {
		t.Fatal(err)
	}
	res, err := out.Take(g)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cat@10s=1", "dog@0s=1", "dog@20s=2", "fox@0s=2", "fox@10s=1"}; !slices.Equal(describe(res), want) {
		t.Fatalf("got %v, want %v", describe(res), want)
	}
	for _, w := range res {
		if w.End.Sub(w.Start) != 10*time.Second {
			t.Fatalf("window %v–%v, want 10 s", w.Start, w.End)
		}
	}
}

// TestAggregateFeedsLaterStages: a Map after hopping sums starts an
// operator reading the window's results; a KeyBy after it keys them again
// (the windowed codec) for a second window stage: distinct users per
// window, exactly.
func TestAggregateFeedsLaterStages(t *testing.T) {
	p := stream.New("s")
	in := stream.From(p, "events", codec.JSON[event]())
	byUser := stream.KeyBy(in, "by-user", func(e event) string { return e.User }, codec.String())
	sums := stream.Aggregate(byUser, "sum", window.Hopping(10*time.Second, 5*time.Second),
		stream.Sum(func(e event) int64 { return e.Count }), codec.Int64())
	text := stream.Map(sums, "text", func(w stream.Windowed[string, int64]) string {
		return fmt.Sprintf("%s@%v=%d", w.Key, w.Start.Sub(sdktest.Start), w.Value)
	}, codec.String())
	outText := stream.Output(text, "sum-text")
	byStart := stream.KeyBy(sums, "by-start", func(w stream.Windowed[string, int64]) int64 { return w.Start.UnixNano() }, codec.Int64())
	users := stream.Aggregate(byStart, "users", window.Hopping(10*time.Second, 5*time.Second), stream.Count[stream.Windowed[string, int64]](), codec.Int64())
	outUsers := stream.Output(users, "users-per-window")

	fs := build(t, p)
	got := shapes(fs)
	want := []string{
		"s.by-user(events/shuffle → s.by-user)",
		"s.sum(s.by-user/group-by → s.sum,s.sum.late)",
		"s.text(s.sum/shuffle → sum-text)",
		"s.by-start(s.sum/shuffle → s.by-start)",
		"s.users(s.by-start/group-by → users-per-window,s.users.late)",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	g, err := sdktest.NewGraph(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		user  string
		count int64
		sec   int
	}{{"ann", 1, 1}, {"bob", 10, 3}, {"ann", 2, 7}, {"ann", 4, 12}} {
		if err := in.SendAt(g, at(e.sec), event{User: e.user, Count: e.count}); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.End(); err != nil {
		t.Fatal(err)
	}
	texts, err := outText.Take(g)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(texts)
	// Windows [-5,5) [0,10) [5,15) [10,20): ann 1@1 2@7 4@12, bob 10@3.
	if want := []string{"ann@-5s=1", "ann@0s=3", "ann@10s=4", "ann@5s=6", "bob@-5s=10", "bob@0s=10"}; !slices.Equal(texts, want) {
		t.Fatalf("got %v, want %v", texts, want)
	}
	ws, err := outUsers.Take(g)
	if err != nil {
		t.Fatal(err)
	}
	// A result's event time is its window's end − 1 ns: the [s, s+10)
	// results fall in the second stage's windows [s, s+10) and [s+5, s+15).
	var n []string
	for _, w := range ws {
		n = append(n, fmt.Sprintf("%v:%v@%v=%d", time.Duration(w.Key-sdktest.Start.UnixNano()), w.Start.Sub(sdktest.Start), w.End.Sub(w.Start), w.Value))
	}
	slices.Sort(n)
	wantN := []string{"-5s:-5s@10s=2", "-5s:0s@10s=2", "0s:0s@10s=2", "0s:5s@10s=2", "10s:10s@10s=1", "10s:15s@10s=1", "5s:10s@10s=1", "5s:5s@10s=1"}
	if !slices.Equal(n, wantN) {
		t.Fatalf("got %v, want %v", n, wantN)
	}
}

// TestAggregateDecodeFailure: a record of the keyed stream whose value
// does not decode fails in the window operator with the codec's error.
func TestAggregateDecodeFailure(t *testing.T) {
	p := stream.New("d")
	in := stream.From(p, "events", codec.JSON[event]())
	byUser := stream.KeyBy(in, "by-user", func(e event) string { return e.User }, codec.String())
	stream.Output(stream.Aggregate(byUser, "count", window.Tumbling(time.Second), stream.Count[event](), codec.Int64()), "counts")
	g := graph(t, p)
	err := g.Send("d.by-user", sdk.Record{Key: []byte("ann"), Value: []byte("{"), EventTime: at(1)})
	var de *codec.DecodeError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), `stream: operator "d.count", stage "count": decode a record of "d.by-user": codec: decode 1 bytes of json`) {
		t.Fatalf("got %v, want the window operator's decode error", err)
	}
}

// TestAggregateRefusesBadWindows: window.New's errors are Build's, naming
// the stage.
func TestAggregateRefusesBadWindows(t *testing.T) {
	p := stream.New("bad")
	k := stream.KeyBy(stream.From(p, "in", codec.String()), "key", func(s string) string { return s }, codec.String())
	stream.Output(stream.Aggregate(k, "agg", window.Tumbling(0), stream.Count[string](), codec.Int64()), "out")
	_, err := p.Build()
	var ce *window.ConfigError
	var se *stream.StageError
	if !errors.As(err, &ce) || !errors.As(err, &se) || se.Stage != "agg" {
		t.Fatalf("got %v, want a *StageError for stage agg wrapping a *window.ConfigError", err)
	}
}
