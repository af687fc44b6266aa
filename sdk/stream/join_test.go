package stream_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/sdk/sdktest"
	"github.com/sluicehq/sluice/sdk/stream"
	"github.com/sluicehq/sluice/sdk/window"
)

// ev is a value of a join's input: a key, an id and an event time in
// milliseconds after sdktest.Start.
type ev struct {
	Key string
	ID  int
	T   int64
}

// time returns ev's event time.
func (e ev) time() time.Time { return sdktest.Start.Add(time.Duration(e.T) * time.Millisecond) }

// joinSkew bounds how far the generated event times go back.
const joinSkew = 300 * time.Millisecond

// events returns n values over keys k0…k(keys-1), ids from id, in arrival
// order: event times rising by 0–40 ms, each up to joinSkew earlier than
// that (out of order, never later than the watermark of a source whose
// out-of-orderness is joinSkew allows).
func events(rng *rand.Rand, n, keys, id int) []ev {
	vs := make([]ev, n)
	base := int64(0)
	for i := range vs {
		base += rng.Int64N(40)
		vs[i] = ev{Key: fmt.Sprintf("k%d", rng.IntN(keys)), ID: id + i, T: max(0, base-rng.Int64N(int64(joinSkew/time.Millisecond)))}
	}
	return vs
}

// pairName is a joined pair as the tests' join functions make it.
func pairName(l, r ev) string { return fmt.Sprintf("%d-%d", l.ID, r.ID) }

// intervalAnswer is the exact interval join of ls and rs in plain Go:
// pairs of equal key with lower ≤ r.T − l.T ≤ upper, sorted.
func intervalAnswer(ls, rs []ev, lower, upper time.Duration) []string {
	var out []string
	for _, l := range ls {
		for _, r := range rs {
			d := r.time().Sub(l.time())
			if l.Key == r.Key && d >= lower && d <= upper {
				out = append(out, pairName(l, r))
			}
		}
	}
	slices.Sort(out)
	return out
}

// windowAnswer is the exact window join of ls and rs in plain Go: each
// pair of equal key once per window of size every slide (epoch-aligned)
// holding both, sorted.
func windowAnswer(ls, rs []ev, size, slide time.Duration) []string {
	starts := func(t time.Time) map[int64]bool {
		s := map[int64]bool{}
		for st := window.Floor(t, slide); st.Add(size).After(t); st = st.Add(-slide) {
			s[st.UnixNano()] = true
		}
		return s
	}
	var out []string
	for _, l := range ls {
		lw := starts(l.time())
		for _, r := range rs {
			if l.Key != r.Key {
				continue
			}
			for st := range starts(r.time()) {
				if lw[st] {
					out = append(out, pairName(l, r))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// joinPipeline is a pipeline joining two streams of ev by key with join
// (IntervalJoin or WindowJoin over the keyed streams), its output
// "pairs".
type joinPipeline struct {
	p           *stream.Pipeline
	left, right *stream.Stream[ev]
	out         *stream.Out[string]
}

// newJoinPipeline reads "orders" and "payments" with From, or from the
// sources given.
func newJoinPipeline(join func(l, r *stream.Keyed[string, ev]) *stream.Stream[string], sources ...sdk.Factory) joinPipeline {
	p := stream.New("j")
	var left, right *stream.Stream[ev]
	if len(sources) == 2 {
		left = stream.FromSource(p, "orders", sources[0], codec.JSON[ev]())
		right = stream.FromSource(p, "payments", sources[1], codec.JSON[ev]())
	} else {
		left = stream.From(p, "orders", codec.JSON[ev]())
		right = stream.From(p, "payments", codec.JSON[ev]())
	}
	key := func(e ev) string { return e.Key }
	joined := join(stream.KeyBy(left, "order-key", key, codec.String()), stream.KeyBy(right, "payment-key", key, codec.String()))
	upper := stream.Map(joined, "upper", func(s string) string { return "<" + s + ">" }, codec.String()) // chained to the join
	return joinPipeline{p: p, left: left, right: right, out: stream.Output(upper, "pairs")}
}

// sendInOrder sends ls and rs interleaved as rng picks, each at its event
// time, the watermark following each side's largest event time sent less
// joinSkew (a side sent in full: none), the lesser of the two, as the
// runtime's does for two sources; then it ends the graph.
func sendInOrder(t *testing.T, g *sdktest.Graph, jp joinPipeline, rng *rand.Rand, ls, rs []ev) {
	t.Helper()
	var maxT [2]time.Time
	wm := time.Time{}
	for len(ls) > 0 || len(rs) > 0 {
		side, in, vs := 0, jp.left, &ls
		if len(ls) == 0 || len(rs) > 0 && rng.IntN(2) == 0 {
			side, in, vs = 1, jp.right, &rs
		}
		e := (*vs)[0]
		*vs = (*vs)[1:]
		if err := in.SendAt(g, e.time(), e); err != nil {
			t.Fatal(err)
		}
		maxT[side] = later(maxT[side], e.time())
		next := sdktest.EndOfTime
		for i, vs := range [2][]ev{ls, rs} {
			if len(vs) > 0 {
				next = earlier(next, maxT[i].Add(-joinSkew))
			}
		}
		if next.After(wm) {
			wm = next
			if err := g.AdvanceWatermark(wm); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := g.End(); err != nil {
		t.Fatal(err)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// unwrapPairs strips the chained Map's brackets.
func unwrapPairs(t *testing.T, vs []string) []string {
	t.Helper()
	out := make([]string, len(vs))
	for i, v := range vs {
		if len(v) < 2 || v[0] != '<' || v[len(v)-1] != '>' {
			t.Fatalf("pair %q did not pass the chained Map", v)
		}
		out[i] = v[1 : len(v)-1]
	}
	slices.Sort(out)
	return out
}

func intervalJoin(lower, upper time.Duration, opts ...stream.Option) func(l, r *stream.Keyed[string, ev]) *stream.Stream[string] {
	return func(l, r *stream.Keyed[string, ev]) *stream.Stream[string] {
		return stream.IntervalJoin(l, r, "join", lower, upper, pairName, codec.String(), opts...)
	}
}

func windowJoin(w window.Windows, opts ...stream.Option) func(l, r *stream.Keyed[string, ev]) *stream.Stream[string] {
	return func(l, r *stream.Keyed[string, ev]) *stream.Stream[string] {
		return stream.WindowJoin(l, r, "join", w, pairName, codec.String(), opts...)
	}
}

// TestJoinsAreExact runs interval and window joins in sdktest at
// parallelism 1 and 4 over out-of-order values and compares them with the
// exact answers computed in plain Go; nothing is late.
func TestJoinsAreExact(t *testing.T) {
	cases := []struct {
		name   string
		join   func(...stream.Option) func(l, r *stream.Keyed[string, ev]) *stream.Stream[string]
		answer func(ls, rs []ev) []string
	}{
		{"interval[-200ms,500ms]", func(o ...stream.Option) func(l, r *stream.Keyed[string, ev]) *stream.Stream[string] {
			return intervalJoin(-200*time.Millisecond, 500*time.Millisecond, o...)
		}, func(ls, rs []ev) []string { return intervalAnswer(ls, rs, -200*time.Millisecond, 500*time.Millisecond) }},
		{"interval[100ms,120ms]", func(o ...stream.Option) func(l, r *stream.Keyed[string, ev]) *stream.Stream[string] {
			return intervalJoin(100*time.Millisecond, 120*time.Millisecond, o...)
		}, func(ls, rs []ev) []string { return intervalAnswer(ls, rs, 100*time.Millisecond, 120*time.Millisecond) }},
		{"interval[-1s,-300ms]", func(o ...stream.Option) func(l, r *stream.Keyed[string, ev]) *stream.Stream[string] {
			return intervalJoin(-time.Second, -300*time.Millisecond, o...)
		}, func(ls, rs []ev) []string { return intervalAnswer(ls, rs, -time.Second, -300*time.Millisecond) }},
		{"tumbling(1s)", func(o ...stream.Option) func(l, r *stream.Keyed[string, ev]) *stream.Stream[string] {
			return windowJoin(window.Tumbling(time.Second), o...)
		}, func(ls, rs []ev) []string { return windowAnswer(ls, rs, time.Second, time.Second) }},
		{"hopping(1s,250ms)", func(o ...stream.Option) func(l, r *stream.Keyed[string, ev]) *stream.Stream[string] {
			return windowJoin(window.Hopping(time.Second, 250*time.Millisecond), o...)
		}, func(ls, rs []ev) []string { return windowAnswer(ls, rs, time.Second, 250*time.Millisecond) }},
	}
	for _, c := range cases {
		for _, par := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/p%d", c.name, par), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(7, uint64(par)))
				ls, rs := events(rng, 400, 5, 0), events(rng, 400, 5, 10000)
				want := c.answer(ls, rs)
				if len(want) < 50 {
					t.Fatalf("only %d pairs in the answer: the data does not exercise the join", len(want))
				}
				jp := newJoinPipeline(c.join(stream.Parallelism(par)))
				g := graph(t, jp.p)
				sendInOrder(t, g, jp, rng, ls, rs)
				vs, err := jp.out.Take(g)
				if err != nil {
					t.Fatal(err)
				}
				if got := unwrapPairs(t, vs); !slices.Equal(got, want) {
					t.Fatalf("got %d pairs, want %d; first differences: %v", len(got), len(want), firstDiff(got, want))
				}
				if late := g.Take("j.join.late"); len(late) != 0 {
					t.Fatalf("%d late records, want none", len(late))
				}
				for i := range par {
					if n := stateEntries(t, g.Instance("j.join", i)); n != 0 {
						t.Fatalf("instance %d keeps %d state entries after the end, want 0: expired values must go", i, n)
					}
				}
			})
		}
	}
}

// firstDiff describes where two sorted answers first differ.
func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d got %q, want %q", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("one is a prefix of the other (%d, %d)", len(got), len(want))
}

// stateEntries counts h's State entries and event timers.
func stateEntries(t *testing.T, h *sdktest.Harness) int {
	t.Helper()
	return len(h.State()) + len(h.EventTimers())
}

// TestJoinLateValues sends values behind the watermark: they join nothing
// and go to the late stream as they arrived; values on time still join.
func TestJoinLateValues(t *testing.T) {
	for _, c := range []struct {
		name string
		join func(l, r *stream.Keyed[string, ev]) *stream.Stream[string]
	}{
		{"interval", intervalJoin(-time.Second, time.Second)},
		{"window", windowJoin(window.Tumbling(time.Second))},
	} {
		t.Run(c.name, func(t *testing.T) {
			jp := newJoinPipeline(c.join)
			g := graph(t, jp.p)
			l1 := ev{Key: "a", ID: 1, T: 100}
			r1 := ev{Key: "a", ID: 2, T: 200}
			if err := jp.left.SendAt(g, l1.time(), l1); err != nil {
				t.Fatal(err)
			}
			if err := g.AdvanceWatermark(at(5)); err != nil { // window [0,1s) closed, l1 expired
				t.Fatal(err)
			}
			if err := jp.right.SendAt(g, r1.time(), r1); err != nil {
				t.Fatal(err)
			}
			l2, r2 := ev{Key: "a", ID: 3, T: 5100}, ev{Key: "a", ID: 4, T: 5200}
			if err := jp.left.SendAt(g, l2.time(), l2); err != nil {
				t.Fatal(err)
			}
			if err := jp.right.SendAt(g, r2.time(), r2); err != nil {
				t.Fatal(err)
			}
			if err := g.End(); err != nil {
				t.Fatal(err)
			}
			vs, err := jp.out.Take(g)
			if err != nil {
				t.Fatal(err)
			}
			if got := unwrapPairs(t, vs); !slices.Equal(got, []string{"3-4"}) {
				t.Fatalf("got %v, want [3-4]", got)
			}
			late := g.Take("j.join.late")
			if len(late) != 1 || late[0].Key == nil || !late[0].EventTime.Equal(r1.time()) {
				t.Fatalf("late records %v, want the right value 2 as it arrived", late)
			}
			v, err := codec.JSON[ev]().Decode(late[0].Value)
			if err != nil || v != r1 {
				t.Fatalf("late value %v (%v), want %v", v, err, r1)
			}
		})
	}
}

// TestJoinRefusals checks what Build refuses in a join, naming the stage.
func TestJoinRefusals(t *testing.T) {
	key := func(e ev) string { return e.Key }
	cases := []struct {
		name, problem string
		add           func(p *stream.Pipeline) *stream.Stream[string]
	}{
		{"lower after upper", "lower bound 1s is after upper bound 0s", func(p *stream.Pipeline) *stream.Stream[string] {
			k := stream.KeyBy(stream.From(p, "a", codec.JSON[ev]()), "ka", key, codec.String())
			k2 := stream.KeyBy(stream.From(p, "b", codec.JSON[ev]()), "kb", key, codec.String())
			return stream.IntervalJoin(k, k2, "join", time.Second, 0, pairName, codec.String())
		}},
		{"session windows", "a window join takes window.Tumbling or window.Hopping", func(p *stream.Pipeline) *stream.Stream[string] {
			k := stream.KeyBy(stream.From(p, "a", codec.JSON[ev]()), "ka", key, codec.String())
			k2 := stream.KeyBy(stream.From(p, "b", codec.JSON[ev]()), "kb", key, codec.String())
			return stream.WindowJoin(k, k2, "join", window.Session(time.Second), pairName, codec.String())
		}},
		{"itself", `joins stage "ka" with itself`, func(p *stream.Pipeline) *stream.Stream[string] {
			k := stream.KeyBy(stream.From(p, "a", codec.JSON[ev]()), "ka", key, codec.String())
			return stream.IntervalJoin(k, k, "join", 0, time.Second, pairName, codec.String())
		}},
		{"key codecs", `left keys are encoded with codec "string", right keys with "json`, func(p *stream.Pipeline) *stream.Stream[string] {
			k := stream.KeyBy(stream.From(p, "a", codec.JSON[ev]()), "ka", key, codec.String())
			k2 := stream.KeyBy(stream.From(p, "b", codec.JSON[ev]()), "kb", key, codec.JSON[string]())
			return stream.IntervalJoin(k, k2, "join", 0, time.Second, pairName, codec.String())
		}},
		{"nil function", "the join function must not be nil", func(p *stream.Pipeline) *stream.Stream[string] {
			k := stream.KeyBy(stream.From(p, "a", codec.JSON[ev]()), "ka", key, codec.String())
			k2 := stream.KeyBy(stream.From(p, "b", codec.JSON[ev]()), "kb", key, codec.String())
			return stream.WindowJoin(k, k2, "join", window.Tumbling(time.Second), nil, codec.String())
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := stream.New("j")
			stream.Output(c.add(p), "out")
			_, err := p.Build()
			var se *stream.StageError
			if !errors.As(err, &se) || !errors.Is(err, stream.ErrInvalid) || se.Stage != "join" || !strings.Contains(se.Problem, c.problem) {
				t.Fatalf("got %v, want a StageError for stage join saying %q", err, c.problem)
			}
		})
	}
}

// evSource produces evs to out, 50 a Poll, each at its event time, its
// position in State, with a watermark joinSkew behind the largest event
// time produced; then it ends.
type evSource struct {
	name, out string
	evs       []ev
}

func (s *evSource) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.name, Outputs: []string{s.out}, Watermarks: &sdk.WatermarkStrategy{OutOfOrderness: joinSkew}}
}
func (*evSource) Init(sdk.Context) error                            { return nil }
func (*evSource) ProcessRecord(sdk.Context, sdk.Record) error       { return nil }
func (*evSource) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
func (*evSource) ResumesFromState()                                 {}
func (s *evSource) Poll(ctx sdk.Context) error {
	pos, err := sdk.GetInt64(ctx.State(), []byte("pos"))
	if err != nil {
		return err
	}
	if pos == int64(len(s.evs)) {
		return sdk.ErrEndOfStream
	}
	end := min(pos+50, int64(len(s.evs)))
	for _, e := range s.evs[pos:end] {
		v, err := codec.JSON[ev]().Encode(nil, e)
		if err != nil {
			return err
		}
		if err := ctx.Produce(s.out, sdk.Record{Value: v, EventTime: e.time()}); err != nil {
			return err
		}
	}
	sdk.PutInt64(ctx.State(), []byte("pos"), end)
	return nil
}

// pairCollector keeps the pairs read from "pairs".
type pairCollector struct {
	out   *stream.Out[string]
	mu    sync.Mutex
	pairs []string
	err   error
}

func (c *pairCollector) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "collect", Inputs: []sdk.Input{{Stream: c.out.Stream()}}}
}
func (*pairCollector) Init(sdk.Context) error                            { return nil }
func (*pairCollector) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
func (c *pairCollector) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	v, err := c.out.Decode(rec)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pairs = append(c.pairs, v)
	if c.err == nil {
		c.err = err
	}
	return nil
}

// TestJoinsInTheRuntime runs an interval join and a hopping window join
// on the embedded runtime, fed by two sources of out-of-order values with
// watermarks, at parallelism 1 and 4 (checkpoints every 100 ms), and
// compares the pairs with the exact answers.
func TestJoinsInTheRuntime(t *testing.T) {
	cases := []struct {
		name   string
		join   func(...stream.Option) func(l, r *stream.Keyed[string, ev]) *stream.Stream[string]
		answer func(ls, rs []ev) []string
	}{
		{"interval", func(o ...stream.Option) func(l, r *stream.Keyed[string, ev]) *stream.Stream[string] {
			return intervalJoin(-200*time.Millisecond, 500*time.Millisecond, o...)
		}, func(ls, rs []ev) []string { return intervalAnswer(ls, rs, -200*time.Millisecond, 500*time.Millisecond) }},
		{"hopping", func(o ...stream.Option) func(l, r *stream.Keyed[string, ev]) *stream.Stream[string] {
			return windowJoin(window.Hopping(time.Second, 500*time.Millisecond), o...)
		}, func(ls, rs []ev) []string { return windowAnswer(ls, rs, time.Second, 500*time.Millisecond) }},
	}
	for _, c := range cases {
		for _, par := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/p%d", c.name, par), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(11, uint64(par)))
				ls, rs := events(rng, 1000, 7, 0), events(rng, 1000, 7, 10000)
				want := c.answer(ls, rs)
				jp := newJoinPipeline(c.join(stream.Parallelism(par)),
					func() sdk.Operator { return &evSource{name: "orders-src", out: "orders", evs: ls} },
					func() sdk.Operator { return &evSource{name: "payments-src", out: "payments", evs: rs} })
				col := &pairCollector{out: jp.out}
				fs := append(build(t, jp.p), func() sdk.Operator { return col })
				rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)},
					CheckpointInterval: 100 * time.Millisecond}, fs...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { rt.Stop(context.Background()) })
				sluicetest.WaitFor(t, 2*time.Minute, "the collector finished", func() bool {
					for _, st := range rt.Status() {
						if st.Name == "collect" {
							return len(st.Instances) == 1 && st.Instances[0].Finished
						}
					}
					return false
				})
				col.mu.Lock()
				defer col.mu.Unlock()
				if col.err != nil {
					t.Fatal(col.err)
				}
				if got := unwrapPairs(t, col.pairs); !slices.Equal(got, want) {
					t.Fatalf("got %d pairs, want %d; first differences: %v", len(got), len(want), firstDiff(got, want))
				}
				t.Logf("%d pairs, as the exact answer", len(want))
			})
		}
	}
}
