package nexmark

import (
	"fmt"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/stream"
)

// Query 18, "last bid": per bidder and auction, the latest bid (Flink's
// q18.sql: ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY
// dateTime DESC) = 1, an updating answer). Keyed by bidder and auction,
// a Process stage keeps the time of the latest bid and hands on each bid
// later than it; the answer is each key's latest.
func q18Query() Query {
	return Query{Name: "q18", Output: answersOf("q18"), Updating: true,
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events("q18", c)
			byPair := stream.KeyBy(stream.Filter(events, "bids", isBid, par), "by-bidder-auction", func(e Event) string {
				return fmt.Sprint(e.Bidder, " ", e.Auction)
			}, codec.String(), par)
			latest := stream.NewValue("latest", codec.Int64())
			last := stream.Process(byPair, "last", stream.Processor[string, Event, Event]{
				Record: func(ctx *stream.Context[string, Event], _ string, e Event) error {
					t, ok, err := latest.Get(ctx)
					if err != nil || ok && t >= e.DateTime.UnixNano() {
						return err
					}
					if err := latest.Set(ctx, e.DateTime.UnixNano()); err != nil {
						return err
					}
					return ctx.Emit(e)
				},
			}, EventCodec(), par)
			stream.Output(last, answersOf("q18"), par)
			return p.Build()
		},
		Answer: func(rec sdk.Record) (Answer, error) {
			e, err := Decode(rec.Value)
			if err != nil || e.Kind != Bid {
				return Answer{}, fmt.Errorf("nexmark: bad q18 answer %q: %v", rec.Value, err)
			}
			return lastBidText(e), nil
		},
		Expected: func(c Config) []Answer {
			last := map[[2]int64]Event{}
			generated(c, func(e Event) {
				if k := [2]int64{e.Bidder, e.Auction}; e.Kind == Bid && e.DateTime.After(last[k].DateTime) {
					last[k] = e
				}
			})
			var out []Answer
			for _, e := range last {
				out = append(out, lastBidText(e))
			}
			return out
		},
	}
}

func lastBidText(e Event) Answer {
	return Answer{Key: fmt.Sprintf("bidder %d on auction %d", e.Bidder, e.Auction), Seq: e.DateTime.UnixNano(), Text: bidText(e)}
}
