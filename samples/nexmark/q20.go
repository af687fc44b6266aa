package nexmark

import (
	"fmt"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/stream"
)

// Query 20, "expand bid with auction": every bid on an auction of
// category 10, with its auction (Flink's q20.sql: an unwindowed inner
// join of bids and auctions on auction = id, WHERE category = 10). Keyed
// by auction id, the join keeps every auction (its category says whether
// its bids count) and the bids that came before their auction; as in
// Flink's join, its state grows without bound. The answers are
// WinningBid values: an auction and a bid, here any bid.
func q20Query() Query {
	return Query{Name: "q20", Output: answersOf("q20"),
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events("q20", c)
			byAuction := auctionsAndBids(events, par)
			auction := stream.NewValue("auction", EventCodec())
			early := stream.NewValue("early-bids", eventsCodec())
			joined := stream.Process(byAuction, "join", stream.Processor[int64, Event, WinningBid]{
				Record: func(ctx *stream.Context[int64, WinningBid], _ int64, e Event) error {
					if e.Kind == Bid {
						a, ok, err := auction.Get(ctx)
						switch {
						case err != nil:
							return err
						case ok && a.Category == 10:
							return ctx.Emit(WinningBid{Auction: a, Bid: e})
						case ok:
							return nil
						}
						bids, _, err := early.Get(ctx)
						if err != nil {
							return err
						}
						return early.Set(ctx, append(bids, e))
					}
					bids, _, err := early.Get(ctx)
					if err != nil {
						return err
					}
					for _, b := range bids {
						if e.Category != 10 {
							break
						}
						if err := ctx.Emit(WinningBid{Auction: e, Bid: b}); err != nil {
							return err
						}
					}
					if err := early.Clear(ctx); err != nil {
						return err
					}
					return auction.Set(ctx, e)
				},
			}, winningBidCodec(), par)
			stream.Output(joined, answersOf("q20"), par)
			return p.Build()
		},
		Answer: pairAnswer("q20", q20Text),
		Expected: func(c Config) []Answer {
			auctions, bids := generatedSales(c)
			var out []Answer
			for _, b := range bids {
				if a, ok := auctions[b.Auction]; ok && a.Category == 10 {
					out = append(out, q20Text(WinningBid{a, b}))
				}
			}
			return out
		},
	}
}

func q20Text(w WinningBid) Answer {
	return Answer{Key: "bid", Text: fmt.Sprintf("%s on auction %d by %d", bidText(w.Bid), w.Auction.ID, w.Auction.Seller)}
}
