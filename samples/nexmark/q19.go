package nexmark

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/stream"
)

// q19Top is the number of bids q19 keeps per auction.
const q19Top = 10

// TopBids is an answer of query 19: an auction's highest bids so far,
// after Seen of its bids.
type TopBids struct {
	Auction int64   `json:"auction"`
	Seen    int64   `json:"seen"`
	Top     []Event `json:"top"`
}

// Query 19, "auction top-k": per auction, the 10 highest bids (Flink's
// q19.sql: ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC)
// <= 10, an updating answer; equal prices here ordered by time, earliest
// first, where Flink's order among them is arbitrary). Keyed by auction,
// a Process stage keeps the top bids and hands them on each time a bid
// enters them; the answer is each auction's latest.
func q19Query() Query {
	return Query{Name: "q19", Output: answersOf("q19"), Updating: true,
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events("q19", c)
			byAuction := stream.KeyBy(stream.Filter(events, "bids", isBid, par), "by-auction", func(e Event) int64 { return e.Auction }, codec.Int64(), par)
			top := stream.NewValue("top", topCodec())
			ranked := stream.Process(byAuction, "top", stream.Processor[int64, Event, TopBids]{
				Record: func(ctx *stream.Context[int64, TopBids], auction int64, e Event) error {
					t, _, err := top.Get(ctx)
					if err != nil {
						return err
					}
					t.Auction, t.Seen = auction, t.Seen+1
					entered := len(t.Top) < q19Top || compareBids(e, t.Top[len(t.Top)-1]) < 0
					if entered {
						t.Top = append(t.Top, e)
						slices.SortFunc(t.Top, compareBids)
						t.Top = t.Top[:min(len(t.Top), q19Top)]
					}
					if err := top.Set(ctx, t); err != nil || !entered {
						return err
					}
					return ctx.Emit(t)
				},
			}, topCodec(), par)
			stream.Output(ranked, answersOf("q19"), par)
			return p.Build()
		},
		Answer: func(rec sdk.Record) (Answer, error) {
			t, err := topCodec().Decode(rec.Value)
			if err != nil {
				return Answer{}, fmt.Errorf("nexmark: bad q19 answer: %w", err)
			}
			return topText(t), nil
		},
		Expected: func(c Config) []Answer {
			per := map[int64][]Event{}
			generated(c, func(e Event) {
				if e.Kind == Bid {
					per[e.Auction] = append(per[e.Auction], e)
				}
			})
			var out []Answer
			for a, bids := range per {
				slices.SortFunc(bids, compareBids)
				out = append(out, topText(TopBids{Auction: a, Seen: int64(len(bids)), Top: bids[:min(len(bids), q19Top)]}))
			}
			return out
		},
	}
}

// topText formats t; its Seq is the bids seen, so that the answer after
// the most bids counts (the bids that enter no top change nothing).
func topText(t TopBids) Answer {
	return Answer{Key: fmt.Sprint("auction ", t.Auction), Seq: t.Seen, Text: joinTexts(t.Top, bidText)}
}

// topCodec encodes TopBids: the auction and the bids seen (uvarints),
// then the list of top bids.
func topCodec() codec.Codec[TopBids] {
	return codec.Codec[TopBids]{Name: "nexmark-top-bids",
		Encode: func(dst []byte, t TopBids) ([]byte, error) {
			return appendEvents(binary.AppendUvarint(binary.AppendUvarint(dst, uint64(t.Auction)), uint64(t.Seen)), t.Top), nil
		},
		Decode: func(b []byte) (TopBids, error) {
			a, w1 := binary.Uvarint(b)
			n, w2 := binary.Uvarint(b[max(w1, 0):])
			if w1 <= 0 || w2 <= 0 {
				return TopBids{}, codec.NewDecodeError[TopBids]("nexmark-top-bids", b, errCorrupt)
			}
			top, rest, err := decodeEvents(b[w1+w2:])
			if err == nil && len(rest) > 0 {
				err = errCorrupt
			}
			if err != nil {
				return TopBids{}, codec.NewDecodeError[TopBids]("nexmark-top-bids", b, err)
			}
			return TopBids{Auction: int64(a), Seen: int64(n), Top: top}, nil
		}}
}
