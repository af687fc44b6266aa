package nexmark_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"

	"github.com/sluicehq/sluice/samples/nexmark"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// queryConfig is the run each query's test checks: 30 s of event time (from
// 07:59:50 UTC: q14 sees two parts of the day) at
// 1,000 events/s (600 people, 1,800 auctions, 27,600 bids); the windows,
// auctions and joins of every query see enough of it to have answers.
var queryConfig = nexmark.Config{Events: 30000, EventsPerSecond: 1000, Seed: 7, Batch: 500, Start: time.Date(2026, 1, 1, 7, 59, 50, 0, time.UTC)}

// runQuery runs q in sdktest at parallelism p, the watermark following
// the sources, and returns its answers.
func runQuery(t *testing.T, q nexmark.Query, cfg nexmark.Config) []nexmark.Answer {
	t.Helper()
	g := runGraph(t, q.Build, cfg)
	var got []nexmark.Answer
	for _, r := range g.Take(q.Output) {
		a, err := q.Answer(r)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a)
	}
	return got
}

// TestQueriesExact runs every query on sdk/stream at parallelism 1 and 4
// and compares its answers with the query's exact answer, which must not
// be empty.
func TestQueriesExact(t *testing.T) {
	for _, q := range nexmark.Queries() {
		t.Run(q.Name, func(t *testing.T) {
			want := q.Expected(queryConfig)
			if len(want) == 0 {
				t.Fatalf("%s: the exact answer is empty", q.Name)
			}
			for _, p := range []int{1, 4} {
				t.Run(fmt.Sprintf("parallelism-%d", p), func(t *testing.T) {
					cfg := queryConfig
					cfg.Parallelism = p
					got := runQuery(t, q, cfg)
					if err := q.Check(got, want); err != nil {
						t.Fatal(err)
					}
					if q.Check(append(got, nexmark.Answer{Key: "k", Text: "bogus"}), want) == nil {
						t.Fatal("Check accepted an answer too many")
					}
				})
			}
		})
	}
}

// runGraph builds a query's operators for cfg and runs them in sdktest
// until the sources have finished and everything they made is handled.
func runGraph(t *testing.T, build func(nexmark.Config) ([]sdk.Factory, error), cfg nexmark.Config) *sdktest.Graph {
	t.Helper()
	fs, err := build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g, err := sdktest.NewGraph(fs)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.RunSources(10000); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestQueriesRuntimeExact runs every query on sdk/stream on the embedded
// runtime (checkpoints every 200 ms) at parallelism 1 and 4 and compares
// its answers with the exact answer.
func TestQueriesRuntimeExact(t *testing.T) {
	cfg := nexmark.Config{Events: 60000, EventsPerSecond: 2000, Seed: 11, Start: time.Date(2026, 1, 1, 23, 59, 45, 0, time.UTC)} // across midnight: two days for q15 to q17
	for _, q := range nexmark.Queries() {
		t.Run(q.Name, func(t *testing.T) {
			want := q.Expected(cfg)
			for _, p := range []int{1, 4} {
				t.Run(fmt.Sprintf("parallelism-%d", p), func(t *testing.T) {
					cfg := cfg
					cfg.Parallelism = p
					fs, err := q.Build(cfg)
					if err != nil {
						t.Fatal(err)
					}
					sink := q.NewSink()
					rt := startRuntime(t, append(fs, sink.Factory()))
					checkFinished(t, rt, q, sink, want)
				})
			}
		})
	}
}

// startRuntime starts the embedded runtime (exactly-once: checkpoints
// every 200 ms) with the operators fs, stopped when the test ends.
func startRuntime(t *testing.T, fs []sdk.Factory) *node.Runtime {
	t.Helper()
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)},
		CheckpointInterval: 200 * time.Millisecond}, fs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Stop(context.Background()) })
	return rt
}

// checkFinished waits until sink has finished and checks its answers
// against want, and that Check rejects one answer too many.
func checkFinished(t *testing.T, rt *node.Runtime, q nexmark.Query, sink *nexmark.Sink, want []nexmark.Answer) {
	t.Helper()
	sluicetest.WaitFor(t, 2*time.Minute, "the sink finished", func() bool { return finished(rt, sink.Name()) })
	got, err := sink.Answers()
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Check(got, want); err != nil {
		t.Fatal(err)
	}
	if q.Check(append(got, nexmark.Answer{Key: "k", Text: "bogus"}), want) == nil {
		t.Fatal("Check accepted an answer too many")
	}
}

// finished reports whether the one instance of operator name has
// finished (its inputs ended and it handled everything).
func finished(rt *node.Runtime, name string) bool {
	for _, st := range rt.Status() {
		if st.Name == name {
			return len(st.Instances) == 1 && st.Instances[0].Finished
		}
	}
	return false
}

// Auctions and persons carry the fields the queries read, drawn as the
// published generator draws them: categories 10 to 14, a reserve above
// the initial bid, an expiry 1 ms to twice the time of the next 100
// auctions later (1,666 events: 166.6 ms at 10,000 events/s, so about
// 167 ms on average), states and cities from its lists.
func TestGeneratorAuctionsAndPersons(t *testing.T) {
	gen := nexmark.Config{Seed: 9}.Generator()
	categories, states := map[int64]int{}, map[string]int{}
	var auctions int64
	var length time.Duration
	for i := range int64(100000) {
		switch e := gen.Event(i); e.Kind {
		case nexmark.Auction:
			auctions++
			categories[e.Category]++
			d := e.Expires.Sub(e.DateTime)
			length += d
			if d < time.Millisecond || d > 333*time.Millisecond || d%time.Millisecond != 0 || e.Reserve <= e.InitialBid || e.InitialBid < 100 {
				t.Fatalf("event %d: auction %+v", i, e)
			}
		case nexmark.Person:
			states[e.State]++
			if e.City == "" {
				t.Fatalf("event %d: person %+v without a city", i, e)
			}
		}
	}
	if len(categories) != 5 || categories[10] == 0 || categories[14] == 0 {
		t.Errorf("categories %v, want 10 to 14", categories)
	}
	if len(states) != 6 {
		t.Errorf("states %v, want the 6 of the published list", states)
	}
	if avg := length / time.Duration(auctions); avg < 150*time.Millisecond || avg > 185*time.Millisecond {
		t.Errorf("auctions last %v on average, want about 167 ms", avg)
	}
}
