package nexmark

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/stream"
	"github.com/sluicehq/sluice/sdk/window"
)

// DayStats is an answer of q15 (per day) and q16 (per channel and day):
// the bids, the distinct bidders and the distinct auctions, in all and
// per price rank (rank 1: price < 10,000; rank 2: < 1,000,000; rank 3:
// the rest; a bidder or auction counts in each rank it has a bid of),
// and, for q16, the hour and minute (UTC) of the latest bid.
type DayStats struct {
	Bids, Bidders, Auctions int64
	RankBids                [3]int64
	RankBidders             [3]int64
	RankAuctions            [3]int64
	Minute                  string `json:",omitempty"`
}

// rankOf returns the price rank of a bid, 0 to 2.
func rankOf(price int64) int {
	switch {
	case price < 10_000:
		return 0
	case price < 1_000_000:
		return 1
	}
	return 2
}

// dayPart is what q15's and q16's first aggregation keeps of one bidder
// ("b") or auction ("a") per channel and day: its bids per rank and the
// latest bid's time.
type dayPart struct {
	Bids   [3]int64
	Latest int64 // Unix ns
}

// dayPartCodec encodes a dayPart as four varints.
func dayPartCodec() codec.Codec[dayPart] {
	return codec.Codec[dayPart]{Name: "nexmark-day-part",
		Encode: func(dst []byte, p dayPart) ([]byte, error) {
			return appendVarints(dst, p.Bids[0], p.Bids[1], p.Bids[2], p.Latest), nil
		},
		Decode: func(b []byte) (dayPart, error) {
			var v [4]int64
			if !readVarints(b, v[:]) {
				return dayPart{}, codec.NewDecodeError[dayPart]("nexmark-day-part", b, errCorrupt)
			}
			return dayPart{Bids: [3]int64{v[0], v[1], v[2]}, Latest: v[3]}, nil
		}}
}

// Query 15, "bidding statistics report": per day (UTC), the bids, the
// distinct bidders and the distinct auctions, in all and per price rank
// (Flink's q15.sql: GROUP BY DATE_FORMAT(dateTime, 'yyyy-MM-dd'), with
// COUNT(DISTINCT …) FILTER (WHERE price …); answered when the day's
// window closes rather than updated per bid).
func q15Query() Query { return dayStatsQuery("q15", false) }

// Query 16, "channel statistics report": q15 per channel and day, with the
// latest bid's hour and minute (Flink's q16.sql: GROUP BY channel,
// DATE_FORMAT(dateTime, 'yyyy-MM-dd'); max(DATE_FORMAT(dateTime,
// 'HH:mm'))).
func q16Query() Query { return dayStatsQuery("q16", true) }

// dayStatsQuery is q15 (perChannel false) or q16. Distinct counts are two
// aggregations, as Flink's split distinct aggregation does them: each bid
// is counted twice, under its bidder and under its auction ("b<id>/" and
// "a<id>/" and, for q16, the channel), per day; the second aggregation,
// keyed by channel (q15: all under one key), counts each bidder and
// auction of the day once, adding up its bids per rank. Each result of
// the first carries the event time of its day's last instant, so it
// falls in the second's window of the same day.
func dayStatsQuery(name string, perChannel bool) Query {
	day := window.Tumbling(24 * time.Hour)
	stats := codec.JSON[DayStats]()
	channelOf := func(e Event) string {
		if perChannel {
			return e.Channel
		}
		return ""
	}
	return Query{Name: name, Output: answersOf(name),
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events(name, c)
			type part struct { // a bid counted under a bidder or an auction
				Key         string
				Price, Time int64
			}
			parts := stream.FlatMap(stream.Filter(events, "bids", isBid, par), "parts", func(e Event, emit func(part)) {
				ch := channelOf(e)
				t := e.DateTime.UnixNano()
				emit(part{"b" + strconv.FormatInt(e.Bidder, 10) + "/" + ch, e.Price, t})
				emit(part{"a" + strconv.FormatInt(e.Auction, 10) + "/" + ch, e.Price, t})
			}, codec.JSON[part](), par)
			byPart := stream.KeyBy(parts, "by-part", func(p part) string { return p.Key }, codec.String(), par)
			perPart := stream.Aggregate(byPart, "per-part", day, stream.Aggregator[part, dayPart, dayPart]{
				Zero: func() dayPart { return dayPart{} },
				Add: func(acc dayPart, p part) dayPart {
					acc.Bids[rankOf(p.Price)]++
					acc.Latest = max(acc.Latest, p.Time)
					return acc
				},
				Result: func(acc dayPart) dayPart { return acc },
				Acc:    dayPartCodec(),
			}, dayPartCodec(), par)
			type windowed = stream.Windowed[string, dayPart]
			byChannel := stream.KeyBy(perPart, "by-channel", func(w windowed) string {
				_, ch, _ := strings.Cut(w.Key, "/")
				return ch
			}, codec.String(), par)
			days := stream.Aggregate(byChannel, "per-day", day, stream.Aggregator[windowed, DayStats, DayStats]{
				Zero: func() DayStats { return DayStats{} },
				Add: func(acc DayStats, w windowed) DayStats {
					return acc.add(w.Key[0] == 'b', w.Value.Bids, time.Unix(0, w.Value.Latest), perChannel)
				},
				Result: func(acc DayStats) DayStats { return acc },
				Acc:    stats,
			}, stats, par)
			stream.Output(days, answersOf(name), par)
			return p.Build()
		},
		Answer: func(rec sdk.Record) (Answer, error) {
			d, err1 := stats.Decode(rec.Value)
			ch, err2 := codec.String().Decode(rec.Key)
			start, _, ok := window.Bounds(rec)
			if err1 != nil || err2 != nil || !ok {
				return Answer{}, fmt.Errorf("nexmark: bad %s answer %q: %q (window bounds: %t): %v", name, rec.Key, rec.Value, ok, err1)
			}
			return dayStatsText(ch, start, d), nil
		},
		Expected: func(c Config) []Answer {
			type key struct {
				channel string
				day     int64
			}
			type sets struct {
				stats             DayStats
				bidders, auctions map[int64][3]bool
			}
			per := map[key]*sets{}
			generated(c, func(e Event) {
				if e.Kind != Bid {
					return
				}
				k := key{channelOf(e), e.DateTime.Truncate(24 * time.Hour).UnixNano()}
				s := per[k]
				if s == nil {
					s = &sets{bidders: map[int64][3]bool{}, auctions: map[int64][3]bool{}}
					per[k] = s
				}
				r := rankOf(e.Price)
				s.stats.Bids++
				s.stats.RankBids[r]++
				for _, m := range []struct {
					set       map[int64][3]bool
					id        int64
					all, rank *int64
				}{{s.bidders, e.Bidder, &s.stats.Bidders, &s.stats.RankBidders[r]}, {s.auctions, e.Auction, &s.stats.Auctions, &s.stats.RankAuctions[r]}} {
					seen, ok := m.set[m.id]
					if !ok {
						*m.all++
					}
					if !seen[r] {
						*m.rank++
						seen[r] = true
					}
					m.set[m.id] = seen
				}
				if perChannel {
					s.stats.Minute = max(s.stats.Minute, e.DateTime.UTC().Format("15:04"))
				}
			})
			var out []Answer
			for k, s := range per {
				out = append(out, dayStatsText(k.channel, time.Unix(0, k.day), s.stats))
			}
			return out
		},
	}
}

// add counts in d one bidder (bidder) or auction of the day, with its
// bids per rank and the time of its latest.
func (d DayStats) add(bidder bool, bids [3]int64, latest time.Time, minute bool) DayStats {
	all, ranks := &d.Auctions, &d.RankAuctions
	if bidder {
		all, ranks = &d.Bidders, &d.RankBidders
		for r, n := range bids {
			d.Bids += n
			d.RankBids[r] += n
		}
	}
	*all++
	for r, n := range bids {
		if n > 0 {
			ranks[r]++
		}
	}
	if minute {
		d.Minute = max(d.Minute, latest.UTC().Format("15:04"))
	}
	return d
}

func dayStatsText(channel string, day time.Time, d DayStats) Answer {
	return Answer{Key: fmt.Sprintf("channel %q on %s", channel, day.UTC().Format(time.DateOnly)), Text: fmt.Sprintf("%+v", d)}
}
