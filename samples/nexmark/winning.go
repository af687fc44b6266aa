package nexmark

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/stream"
)

// WinningBid is an auction with its winning bid: the highest bid made
// while it was open (from its DateTime to its Expires, both included),
// the earliest of equal ones (Flink's q9.sql; unlike Beam's, no reserve
// price).
type WinningBid struct {
	Auction, Bid Event
}

// winningBidCodec encodes a WinningBid as a list of its two events.
func winningBidCodec() codec.Codec[WinningBid] {
	list := eventsCodec()
	return codec.Codec[WinningBid]{Name: "nexmark-winning-bid",
		Encode: func(dst []byte, w WinningBid) ([]byte, error) {
			return appendEvents(dst, []Event{w.Auction, w.Bid}), nil
		},
		Decode: func(b []byte) (WinningBid, error) {
			es, err := list.Decode(b)
			if err != nil || len(es) != 2 {
				return WinningBid{}, codec.NewDecodeError[WinningBid]("nexmark-winning-bid", b, fmt.Errorf("%w: %d events, want 2 (%v)", errCorrupt, len(es), err))
			}
			return WinningBid{es[0], es[1]}, nil
		}}
}

// winningBids adds the stages of Flink's q9 to events: auctions and bids
// keyed by auction id, and per auction a Process stage keeping the
// auction with its best bid so far (one state entry), and the bids that
// came before it (from
// another source instance), handing on the winner when the watermark
// passes the auction's expiry. A bid without its auction once the
// watermark passes it can no longer win (its auction, were it to exist,
// would be earlier) and is dropped.
func winningBids(events *stream.Stream[Event], par stream.Option) *stream.Stream[WinningBid] {
	sales := stream.Filter(events, "auctions-and-bids", func(e Event) bool { return e.Kind != Person }, par)
	byAuction := stream.KeyBy(sales, "by-auction", func(e Event) int64 {
		if e.Kind == Auction {
			return e.ID
		}
		return e.Auction
	}, codec.Int64(), par)
	// open is an open auction and its best bid so far, if any: one state
	// entry, read once per bid and written when the bid is the best.
	open := stream.NewValue("open", eventsCodec())
	early := stream.NewValue("early-bids", eventsCodec())
	type ctx = stream.Context[int64, WinningBid]
	// better reports whether bid may win the auction of o, and beats its
	// best so far.
	better := func(o []Event, bid Event) bool {
		a := o[0]
		if bid.DateTime.Before(a.DateTime) || bid.DateTime.After(a.Expires) {
			return false
		}
		return len(o) == 1 || compareBids(bid, o[1]) < 0
	}
	return stream.Process(byAuction, "winner", stream.Processor[int64, Event, WinningBid]{
		Record: func(ctx *ctx, _ int64, e Event) error {
			if e.Kind == Auction {
				bids, _, err := early.Get(ctx)
				if err != nil {
					return err
				}
				o := []Event{e}
				for _, b := range bids {
					if better(o, b) {
						o = []Event{e, b}
					}
				}
				if err := early.Clear(ctx); err != nil {
					return err
				}
				if err := open.Set(ctx, o); err != nil {
					return err
				}
				return ctx.SetEventTimer("close", e.Expires.Add(time.Nanosecond))
			}
			o, ok, err := open.Get(ctx)
			switch {
			case err != nil:
				return err
			case ok && better(o, e):
				return open.Set(ctx, []Event{o[0], e})
			case ok:
				return nil
			}
			bids, _, err := early.Get(ctx)
			if err != nil {
				return err
			}
			if len(bids) == 0 {
				if err := ctx.SetEventTimer("early", e.DateTime.Add(time.Nanosecond)); err != nil {
					return err
				}
			}
			return early.Set(ctx, append(bids, e))
		},
		EventTimer: func(ctx *ctx, _ int64, timer string, at time.Time) error {
			if timer == "early" {
				return dropEarly(ctx, early, at)
			}
			o, ok, err := open.Get(ctx)
			if err != nil || !ok {
				return err
			}
			if err := open.Clear(ctx); err != nil {
				return err
			}
			if len(o) < 2 {
				return nil
			}
			return ctx.Emit(WinningBid{Auction: o[0], Bid: o[1]})
		},
	}, winningBidCodec(), par)
}

// dropEarly drops the early bids before at, when no auction came for
// them, and sets the timer again for the earliest left.
func dropEarly(ctx *stream.Context[int64, WinningBid], early stream.Value[[]Event], at time.Time) error {
	bids, _, err := early.Get(ctx)
	if err != nil {
		return err
	}
	bids = slices.DeleteFunc(bids, func(b Event) bool { return b.DateTime.Before(at) })
	if len(bids) == 0 {
		return early.Clear(ctx)
	}
	first := slices.MinFunc(bids, byTime)
	if err := ctx.SetEventTimer("early", first.DateTime.Add(time.Nanosecond)); err != nil {
		return err
	}
	return early.Set(ctx, bids)
}

// expectedWinners computes the winning bid of every auction of c's run.
func expectedWinners(c Config) []WinningBid {
	auctions := map[int64]Event{}
	var bids []Event
	generated(c, func(e Event) {
		switch e.Kind {
		case Auction:
			auctions[e.ID] = e
		case Bid:
			bids = append(bids, e)
		}
	})
	best := map[int64]Event{}
	for _, b := range bids {
		a, ok := auctions[b.Auction]
		if !ok || b.DateTime.Before(a.DateTime) || b.DateTime.After(a.Expires) {
			continue
		}
		if w, ok := best[a.ID]; !ok || compareBids(b, w) < 0 {
			best[a.ID] = b
		}
	}
	var out []WinningBid
	for id, b := range best {
		out = append(out, WinningBid{auctions[id], b})
	}
	return out
}

// Query 9, "winning bids": every auction with its winning bid (Flink's
// q9.sql).
func q9Query() Query {
	return Query{Name: "q9", Output: answersOf("q9"),
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events("q9", c)
			stream.Output(winningBids(events, par), answersOf("q9"), par)
			return p.Build()
		},
		Answer: func(rec sdk.Record) (Answer, error) {
			w, err := winningBidCodec().Decode(rec.Value)
			if err != nil {
				return Answer{}, fmt.Errorf("nexmark: bad q9 answer: %w", err)
			}
			return winnerText(w), nil
		},
		Expected: func(c Config) []Answer {
			var out []Answer
			for _, w := range expectedWinners(c) {
				out = append(out, winnerText(w))
			}
			return out
		},
	}
}

func winnerText(w WinningBid) Answer {
	return Answer{Key: fmt.Sprint("auction ", w.Auction.ID), Text: bidText(w.Bid)}
}

// CategoryPrice is an answer of query 4: the average winning price of
// the auctions of a category closed so far.
type CategoryPrice struct {
	Category int64 `json:"category"`
	Auctions int64 `json:"auctions"`
	Sum      int64 `json:"sum"`
	Average  int64 `json:"average"`
}

// Query 4, "average price for a category": per category, the average of
// the winning bids' prices (Flink's q4.sql: the winning bids as q9 finds
// them, then AVG(final) GROUP BY category, an updating result; AVG of a
// BIGINT is a BIGINT, rounded down). Each closed auction updates its
// category's average: the answer is each category's latest.
func q4Query() Query {
	return Query{Name: "q4", Output: answersOf("q4"), Updating: true,
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events("q4", c)
			byCategory := stream.KeyBy(winningBids(events, par), "by-category", func(w WinningBid) int64 { return w.Auction.Category }, codec.Int64(), par)
			sofar := stream.NewValue("so-far", codec.JSON[CategoryPrice]())
			avg := stream.Process(byCategory, "average", stream.Processor[int64, WinningBid, CategoryPrice]{
				Record: func(ctx *stream.Context[int64, CategoryPrice], category int64, w WinningBid) error {
					c, _, err := sofar.Get(ctx)
					if err != nil {
						return err
					}
					c = CategoryPrice{Category: category, Auctions: c.Auctions + 1, Sum: c.Sum + w.Bid.Price}
					c.Average = c.Sum / c.Auctions
					if err := sofar.Set(ctx, c); err != nil {
						return err
					}
					return ctx.Emit(c)
				},
			}, codec.JSON[CategoryPrice](), par)
			stream.Output(avg, answersOf("q4"), par)
			return p.Build()
		},
		Answer: func(rec sdk.Record) (Answer, error) {
			c, err := codec.JSON[CategoryPrice]().Decode(rec.Value)
			if err != nil {
				return Answer{}, fmt.Errorf("nexmark: bad q4 answer: %w", err)
			}
			return categoryText(c), nil
		},
		Expected: func(c Config) []Answer {
			per := map[int64]CategoryPrice{}
			for _, w := range expectedWinners(c) {
				p := per[w.Auction.Category]
				p.Category, p.Auctions, p.Sum = w.Auction.Category, p.Auctions+1, p.Sum+w.Bid.Price
				p.Average = p.Sum / p.Auctions
				per[p.Category] = p
			}
			var out []Answer
			for _, p := range per {
				out = append(out, categoryText(p))
			}
			return out
		},
	}
}

func categoryText(c CategoryPrice) Answer {
	return Answer{Key: fmt.Sprint("category ", c.Category), Seq: c.Auctions, Text: fmt.Sprintf("%d (%d auctions)", c.Average, c.Auctions)}
}
