package nexmark

import (
	"encoding/binary"
	"errors"
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
	byAuction := auctionsAndBids(events, par)
	// open is an open auction and its best bid so far, if any: one state
	// entry, read once per bid without decoding its events, and written
	// when the bid is the best.
	open := stream.NewValue("open", openCodec())
	early := stream.NewValue("early-bids", eventsCodec())
	type ctx = stream.Context[int64, WinningBid]
	// better reports whether bid may win the auction of o, and beats its
	// best so far.
	better := func(o openAuction, bid Event) bool {
		t := bid.DateTime.UnixNano()
		if t < o.start || t > o.expires {
			return false
		}
		return !o.hasBest || bid.Price > o.bestPrice || bid.Price == o.bestPrice && t < o.bestTime
	}
	return stream.Process(byAuction, "winner", stream.Processor[int64, Event, WinningBid]{
		Record: func(ctx *ctx, _ int64, e Event) error {
			if e.Kind == Auction {
				bids, _, err := early.Get(ctx)
				if err != nil {
					return err
				}
				o := openAuction{start: e.DateTime.UnixNano(), expires: e.Expires.UnixNano(), auction: e.Encode(nil)}
				for _, b := range bids {
					if better(o, b) {
						o = o.withBest(b)
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
				return open.Set(ctx, o.withBest(e))
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
			if !o.hasBest {
				return nil
			}
			a, err1 := Decode(o.auction)
			b, err2 := Decode(o.bid)
			if err := errors.Join(err1, err2); err != nil {
				return fmt.Errorf("nexmark: q9 winner of auction %d: %w", a.ID, err)
			}
			return ctx.Emit(WinningBid{Auction: a, Bid: b})
		},
	}, winningBidCodec(), par)
}

// openAuction is an open auction as q9's winner keeps it: the times and
// best price it decides by, and the encoded auction and best bid, decoded
// only when the winner is handed on.
type openAuction struct {
	start, expires      int64 // Unix ns
	hasBest             bool
	bestPrice, bestTime int64
	auction, bid        []byte // encoded events
}

// withBest returns o with bid as its best bid.
func (o openAuction) withBest(bid Event) openAuction {
	o.hasBest, o.bestPrice, o.bestTime, o.bid = true, bid.Price, bid.DateTime.UnixNano(), bid.Encode(nil)
	return o
}

// openCodec encodes an openAuction: varints start, expires, then 0 or 1
// (a best bid) and its price and time, then the auction's length and the
// auction, then the best bid.
func openCodec() codec.Codec[openAuction] {
	return codec.Codec[openAuction]{Name: "nexmark-open-auction",
		Encode: func(dst []byte, o openAuction) ([]byte, error) {
			dst = binary.AppendVarint(binary.AppendVarint(dst, o.start), o.expires)
			if o.hasBest {
				dst = binary.AppendVarint(binary.AppendVarint(append(dst, 1), o.bestPrice), o.bestTime)
			} else {
				dst = append(dst, 0)
			}
			dst = append(binary.AppendUvarint(dst, uint64(len(o.auction))), o.auction...)
			return append(dst, o.bid...), nil
		},
		Decode: func(b []byte) (openAuction, error) {
			var o openAuction
			bad := func() (openAuction, error) {
				return openAuction{}, codec.NewDecodeError[openAuction]("nexmark-open-auction", b, errCorrupt)
			}
			rest := b
			varint := func(x *int64) bool {
				v, w := binary.Varint(rest)
				*x, rest = v, rest[min(max(w, 0), len(rest)):]
				return w > 0
			}
			if !varint(&o.start) || !varint(&o.expires) || len(rest) == 0 || rest[0] > 1 {
				return bad()
			}
			o.hasBest, rest = rest[0] == 1, rest[1:]
			if o.hasBest && (!varint(&o.bestPrice) || !varint(&o.bestTime)) {
				return bad()
			}
			l, w := binary.Uvarint(rest)
			if w <= 0 || l > uint64(len(rest)-w) {
				return bad()
			}
			kept := slices.Clone(rest[w:]) // one copy for both events
			o.auction, o.bid = kept[:l:l], kept[l:]
			return o, nil
		}}
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
	auctions, bids := generatedSales(c)
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
		Answer: pairAnswer("q9", winnerText),
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

// auctionsAndBids keys the auctions and bids of events by auction id.
func auctionsAndBids(events *stream.Stream[Event], par stream.Option) *stream.Keyed[int64, Event] {
	sales := stream.Filter(events, "auctions-and-bids", func(e Event) bool { return e.Kind != Person }, par)
	return stream.KeyBy(sales, "by-auction", func(e Event) int64 {
		if e.Kind == Auction {
			return e.ID
		}
		return e.Auction
	}, codec.Int64(), par)
}

// pairAnswer returns the Answer function of a query answering with
// auction and bid pairs, formatted by text.
func pairAnswer(query string, text func(WinningBid) Answer) func(sdk.Record) (Answer, error) {
	return func(rec sdk.Record) (Answer, error) {
		w, err := winningBidCodec().Decode(rec.Value)
		if err != nil {
			return Answer{}, fmt.Errorf("nexmark: bad %s answer: %w", query, err)
		}
		return text(w), nil
	}
}

// generatedSales returns the auctions of c's run by id, and its bids.
func generatedSales(c Config) (map[int64]Event, []Event) {
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
	return auctions, bids
}
