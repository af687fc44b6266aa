package bench

import (
	"fmt"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/state"
	"github.com/sluicehq/sluice/sdk/stream"
)

// typedWordCount is the keyed word count written with sdk/stream: the
// source's words keyed by themselves, counted per key in a state.Map, each
// new count to the sink. It builds to the operators the hand-written run
// has (the source, "twc.count" reading by key, the sink reading its counts)
// plus whatever Build does not chain.
func typedWordCount(source, sink sdk.Factory, par int) ([]sdk.Factory, error) {
	counts := state.NewMap("n", codec.Bytes(), codec.Int64())
	p := stream.New("twc")
	words := stream.FromSource(p, "source", source, codec.Bytes())
	byWord := stream.KeyBy(words, "by-word", func(w []byte) []byte { return w }, codec.Bytes())
	counted := stream.Process(byWord, "count", stream.Processor[[]byte, []byte, int64]{
		Record: func(ctx *stream.Context[[]byte, int64], w, _ []byte) error {
			n, _, err := counts.Get(ctx.State(), w)
			if err != nil {
				return err
			}
			if err := counts.Put(ctx.State(), w, n+1); err != nil {
				return err
			}
			return ctx.Emit(n + 1)
		},
	}, codec.Int64(), stream.Parallelism(par))
	stream.To(counted, "sink", sink)
	ops, err := p.Build()
	if err != nil {
		return nil, fmt.Errorf("bench: typed word count: %w", err)
	}
	return ops, nil
}

// typedRows: the keyed word count and YSB written with sdk/stream against
// the hand-written ones, alternating (the word count in one process, each
// YSB run on a runtime of its own).
func (t *tabler) typedRows() ([]row, error) {
	n := t.cfg.Records
	raw, typed, err := t.alternate([2]string{"word count, hand-written", "word count, sdk/stream"}, t.cfg.Runs, true, func(second bool) (Result, error) {
		return WordCount(WordCountConfig{Records: n, Keys: 10_000, NoLatencies: true, Typed: second})
	}, func(Result) string { return "" })
	if err != nil {
		return nil, err
	}
	base, rate := medianRate(raw), medianRate(typed)
	rows := []row{
		{"sluice keyed word count, hand-written operators (baseline)", human(base), "records/s", "1.00×", "runs alternate with the next row"},
		{"sluice keyed word count, sdk/stream", human(rate), "records/s", fmt.Sprintf("%.2f×", rate/base),
			pairRange(raw, typed) + "; FromSource → KeyBy → Process (state.Map) → To; target ≥ 0.90×"},
	}
	events := t.cfg.YSBEvents
	if events <= 0 {
		events = 2_000_000
	}
	hand, typedYSB, err := t.alternate([2]string{"YSB, hand-written", "YSB, sdk/stream"}, t.cfg.Runs, false, func(second bool) (Result, error) {
		r, err := YSB(YSBConfig{Events: events, Typed: second})
		return r.Result, err
	}, func(r Result) string { return fmt.Sprintf(" (%.1f s)", r.Elapsed.Seconds()) })
	if err != nil {
		return nil, err
	}
	base, rate = medianRate(hand), medianRate(typedYSB)
	return append(rows,
		row{"YSB, hand-written operators (baseline)", human(base), "events/s", "1.00×",
			fmt.Sprintf("%s JSON events, parallelism 2, no guarantee, output = ysb.Expected; runs alternate with the next row", human(float64(events)))},
		row{"YSB, sdk/stream (ysb.TypedOperators)", human(rate), "events/s", fmt.Sprintf("%.2f×", rate/base),
			pairRange(hand, typedYSB) + "; FromSource(AdCodec) → Filter → Map → KeyBy → Aggregate → sink; output = ysb.Expected; target ≥ 0.90×"}), nil
}
