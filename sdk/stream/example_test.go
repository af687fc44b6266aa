package stream_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/sdktest"
	"github.com/sluicehq/sluice/sdk/state"
	"github.com/sluicehq/sluice/sdk/stream"
	"github.com/sluicehq/sluice/sdk/window"
)

// Count is a word's count so far.
type Count struct {
	Word string `json:"word"`
	N    int64  `json:"n"`
}

// The word count. Build makes two operators: the split, with KeyBy
// chained to it, and the count, reading the words by key; sdktest runs
// them with typed input and output.
func Example() {
	counts := state.NewMap("counts", codec.String(), codec.Int64())

	p := stream.New("wordcount")
	sentences := stream.From(p, "sentences", codec.String())
	words := stream.FlatMap(sentences, "split", func(s string, emit func(string)) {
		for _, w := range strings.Fields(s) {
			emit(strings.ToLower(w))
		}
	}, codec.String())
	byWord := stream.KeyBy(words, "by-word", func(w string) string { return w }, codec.String())
	counted := stream.Process(byWord, "count", stream.Processor[string, string, Count]{
		Record: func(ctx *stream.Context[string, Count], w, _ string) error {
			n, _, err := counts.Get(ctx.State(), w)
			if err != nil {
				return err
			}
			if err := counts.Put(ctx.State(), w, n+1); err != nil {
				return err
			}
			return ctx.Emit(Count{Word: w, N: n + 1})
		},
	}, codec.JSON[Count](), stream.Parallelism(2))
	out := stream.Output(counted, "word-counts")

	factories, err := p.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range factories {
		m := f().Metadata()
		fmt.Printf("%s: %v → %v\n", m.Name, m.Inputs, m.Outputs)
	}

	g, err := sdktest.NewGraph(factories)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := sentences.Send(g, "To be or not to be", "that is the question"); err != nil {
		fmt.Println(err)
		return
	}
	got, err := out.Take(g)
	if err != nil {
		fmt.Println(err)
		return
	}
	final := map[string]int64{}
	for _, c := range got {
		final[c.Word] = c.N
	}
	for _, w := range slices.Sorted(maps.Keys(final)) {
		fmt.Printf("%s=%d ", w, final[w])
	}
	fmt.Println()
	// Output:
	// wordcount.split: [{sentences shuffle}] → [wordcount.by-word]
	// wordcount.count: [{wordcount.by-word group-by}] → [word-counts]
	// be=2 is=1 not=1 or=1 question=1 that=1 the=1 to=2
}

// Clicks per user in 10-second tumbling windows of event time.
func ExampleAggregate() {
	type click struct {
		User string `json:"user"`
	}
	p := stream.New("clicks")
	clicks := stream.From(p, "clicks", codec.JSON[click]())
	byUser := stream.KeyBy(clicks, "by-user", func(c click) string { return c.User }, codec.String())
	perUser := stream.Aggregate(byUser, "per-user", window.Tumbling(10*time.Second), stream.Count[click](), codec.Int64())
	out := stream.Output(perUser, "clicks-per-user")

	factories, err := p.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := sdktest.NewGraph(factories)
	if err != nil {
		fmt.Println(err)
		return
	}
	t0 := sdktest.Start
	for _, c := range []struct {
		user string
		sec  int
	}{{"ann", 1}, {"bob", 3}, {"ann", 8}, {"ann", 12}} {
		if err := clicks.SendAt(g, t0.Add(time.Duration(c.sec)*time.Second), click{User: c.user}); err != nil {
			fmt.Println(err)
			return
		}
	}
	if err := g.End(); err != nil { // the input ends: every window closes
		fmt.Println(err)
		return
	}
	res, err := out.Take(g)
	if err != nil {
		fmt.Println(err)
		return
	}
	var lines []string
	for _, w := range res {
		lines = append(lines, fmt.Sprintf("%s [%v, %v): %d", w.Key, w.Start.Sub(t0), w.End.Sub(t0), w.Value))
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// ann [0s, 10s): 2
	// ann [10s, 20s): 1
	// bob [0s, 10s): 1
}
