package nexmark

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/stream"
	"github.com/sluicehq/sluice/sdk/window"
)

// Q7Window is the size of q7's tumbling windows (Flink's q7.sql: 10 s).
const Q7Window = 10 * time.Second

// q7Spread is the number of keys q7's first aggregation spreads the bids
// over (by auction id) before the windows' maxima meet under one key.
const q7Spread = 64

// Query 7, "highest bid": per 10 s tumbling window, the bids with the
// highest price (Flink's q7.sql: the window's MAX(price) joined back to
// the bids of the window at that price). It is two aggregations: the
// highest bids of each window per auction id modulo q7Spread, then, keyed
// by window end, the highest of those; the second window, one slide long,
// holds exactly the first's results for that window (each carries the
// event time of its window's last instant).
func q7Query() Query {
	return Query{Name: "q7", Output: answersOf("q7"),
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events("q7", c)
			bids := stream.Filter(events, "bids", isBid, par)
			spread := stream.KeyBy(bids, "by-auction", func(e Event) int64 { return e.Auction % q7Spread }, codec.Int64(), par)
			local := stream.Aggregate(spread, "local-highest", window.Tumbling(Q7Window), highest(func(e Event) []Event { return []Event{e} }), eventsCodec(), par)
			byWindow := stream.KeyBy(local, "by-window", func(w stream.Windowed[int64, []Event]) int64 { return w.End.UnixNano() }, codec.Int64(), par)
			top := stream.Aggregate(byWindow, "highest", window.Tumbling(Q7Window), highest(func(w stream.Windowed[int64, []Event]) []Event { return w.Value }), eventsCodec(), par)
			stream.Output(top, answersOf("q7"), par)
			return p.Build()
		},
		Answer: func(rec sdk.Record) (Answer, error) {
			bids, err := eventsCodec().Decode(rec.Value)
			_, end, ok := window.Bounds(rec)
			if err != nil || !ok {
				return Answer{}, fmt.Errorf("nexmark: bad q7 answer %q (window bounds: %t): %v", rec.Value, ok, err)
			}
			return highestText(end, bids), nil
		},
		Expected: func(c Config) []Answer {
			top := map[int64][]Event{}
			size := int64(Q7Window)
			generated(c, func(e Event) {
				if e.Kind != Bid {
					return
				}
				t := e.DateTime.UnixNano()
				end := t - ((t%size)+size)%size + size
				switch bs := top[end]; {
				case len(bs) == 0 || e.Price > bs[0].Price:
					top[end] = []Event{e}
				case e.Price == bs[0].Price:
					top[end] = append(bs, e)
				}
			})
			var out []Answer
			for end, bids := range top {
				out = append(out, highestText(time.Unix(0, end), bids))
			}
			return out
		},
	}
}

// highest is the aggregator of the bids of the highest price among the
// bids bids(v) of each value v.
func highest[T any](bids func(T) []Event) stream.Aggregator[T, []Event, []Event] {
	add := func(acc, bs []Event) []Event {
		for _, b := range bs {
			switch {
			case len(acc) == 0 || b.Price > acc[0].Price:
				acc = []Event{b}
			case b.Price == acc[0].Price:
				acc = append(acc, b)
			}
		}
		return acc
	}
	return stream.Aggregator[T, []Event, []Event]{
		Zero:   func() []Event { return nil },
		Add:    func(acc []Event, v T) []Event { return add(acc, bids(v)) },
		Merge:  add,
		Result: func(acc []Event) []Event { return slices.SortedFunc(slices.Values(acc), byTime) },
		Acc:    eventsCodec(),
	}
}

func highestText(end time.Time, bids []Event) Answer {
	slices.SortFunc(bids, byTime)
	return Answer{Key: "window ending " + end.UTC().Format(time.TimeOnly), Text: joinTexts(bids, bidText)}
}
