package nexmark

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/stream"
	"github.com/sluicehq/sluice/sdk/window"
)

// AuctionDay is an answer of query 17: the statistics of one auction's
// bids of one day (UTC).
type AuctionDay struct {
	Bids int64 `json:"bids"`
	// Rank1, Rank2 and Rank3 count the bids of price < 10,000, <
	// 1,000,000 and the rest.
	Rank1   int64 `json:"rank1"`
	Rank2   int64 `json:"rank2"`
	Rank3   int64 `json:"rank3"`
	Min     int64 `json:"min"`
	Max     int64 `json:"max"`
	Sum     int64 `json:"sum"`
	Average int64 `json:"average"`
}

// add counts bid e in d.
func (d AuctionDay) add(e Event) AuctionDay {
	switch {
	case e.Price < 10_000:
		d.Rank1++
	case e.Price < 1_000_000:
		d.Rank2++
	default:
		d.Rank3++
	}
	if d.Bids == 0 || e.Price < d.Min {
		d.Min = e.Price
	}
	d.Max = max(d.Max, e.Price)
	d.Bids, d.Sum = d.Bids+1, d.Sum+e.Price
	d.Average = d.Sum / d.Bids
	return d
}

// Query 17, "auction statistics report": per auction and day, the number
// of bids, of bids in each price range, and the least, highest, average
// (rounded down) and total price (Flink's q17.sql, GROUP BY auction,
// DATE_FORMAT(dateTime, 'yyyy-MM-dd'); here a tumbling window of a day
// of event time, UTC, answered when it closes rather than updated per
// bid).
func q17Query() Query {
	return Query{Name: "q17", Output: answersOf("q17"),
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events("q17", c)
			byAuction := stream.KeyBy(stream.Filter(events, "bids", isBid, par), "by-auction", func(e Event) int64 { return e.Auction }, codec.Int64(), par)
			days := stream.Aggregate(byAuction, "per-day", window.Tumbling(24*time.Hour), stream.Aggregator[Event, AuctionDay, AuctionDay]{
				Zero:   func() AuctionDay { return AuctionDay{} },
				Add:    AuctionDay.add,
				Result: func(d AuctionDay) AuctionDay { return d },
				Acc:    codec.JSON[AuctionDay](),
			}, codec.JSON[AuctionDay](), par)
			stream.Output(days, answersOf("q17"), par)
			return p.Build()
		},
		Answer: func(rec sdk.Record) (Answer, error) {
			d, err1 := codec.JSON[AuctionDay]().Decode(rec.Value)
			auction, err2 := codec.Int64().Decode(rec.Key)
			start, _, ok := window.Bounds(rec)
			if err1 != nil || err2 != nil || !ok {
				return Answer{}, fmt.Errorf("nexmark: bad q17 answer %q: %q (window bounds: %t): %v", rec.Key, rec.Value, ok, err1)
			}
			return auctionDayText(auction, start, d), nil
		},
		Expected: func(c Config) []Answer {
			type key struct{ auction, day int64 }
			per := map[key]AuctionDay{}
			day := int64(24 * time.Hour)
			generated(c, func(e Event) {
				if e.Kind == Bid {
					k := key{e.Auction, e.DateTime.UnixNano() / day}
					per[k] = per[k].add(e)
				}
			})
			var out []Answer
			for k, d := range per {
				out = append(out, auctionDayText(k.auction, time.Unix(0, k.day*day), d))
			}
			return out
		},
	}
}

func auctionDayText(auction int64, day time.Time, d AuctionDay) Answer {
	return Answer{Key: fmt.Sprintf("auction %d on %s", auction, day.UTC().Format(time.DateOnly)), Text: fmt.Sprintf("%+v", d)}
}
