package nexmark

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/stream"
)

// SideInputKeys is the number of keys of q13's side input: a bid joins
// the row of key auction mod SideInputKeys (Flink's q13.sql: mod(auction,
// 10000)).
const SideInputKeys = 10_000

// SideInput returns q13's side input, a bounded table as Flink's q13
// reads it from a file: "key,value" lines, one per key below
// SideInputKeys but those ≡ 0 mod 7 (absent: their bids join nothing, as
// in an inner join).
func SideInput() string {
	var b strings.Builder
	for k := range int64(SideInputKeys) {
		if k%7 != 0 {
			fmt.Fprintf(&b, "%d,value-%d\n", k, k*31%1000)
		}
	}
	return b.String()
}

// parseSideInput reads SideInput's lines into a table.
func parseSideInput(s string) (map[int64]string, error) {
	table := map[int64]string{}
	for line := range strings.Lines(s) {
		k, v, ok := strings.Cut(strings.TrimSuffix(line, "\n"), ",")
		var key int64
		if _, err := fmt.Sscan(k, &key); !ok || err != nil {
			return nil, fmt.Errorf("nexmark: q13 side input: bad line %q", line)
		}
		table[key] = v
	}
	return table, nil
}

// SideBid is an answer of q13: a bid and the side input's value for its
// auction.
type SideBid struct {
	Bid   Event
	Value string
}

// sideBidCodec encodes a SideBid: the value's length (a uvarint), the
// value, then the encoded bid.
func sideBidCodec() codec.Codec[SideBid] {
	list := eventsCodec()
	return codec.Codec[SideBid]{Name: "nexmark-side-bid",
		Encode: func(dst []byte, sb SideBid) ([]byte, error) {
			return list.Encode(appendString(dst, sb.Value), []Event{sb.Bid})
		},
		Decode: func(b []byte) (SideBid, error) {
			v, rest, err := cutString(b)
			var es []Event
			if err == nil {
				es, err = list.Decode(rest)
			}
			if err != nil || len(es) != 1 {
				return SideBid{}, codec.NewDecodeError[SideBid]("nexmark-side-bid", b, fmt.Errorf("%w: %v", errCorrupt, err))
			}
			return SideBid{Bid: es[0], Value: v}, nil
		}}
}

// Query 13, "bounded side input join": every bid with the value of its
// auction's row in a bounded table, SideInput (Flink's q13.sql joins a
// file's table FOR SYSTEM_TIME AS OF the bid's processing time, on
// mod(auction, 10000) = key; the table here does not change, so that
// is the same as joining it once). The table is read when the pipeline
// is built and held by the join's Map stages, each instance a copy: the
// typed API has no broadcast state, which a side input that changes
// would need.
func q13Query() Query {
	return Query{Name: "q13", Output: answersOf("q13"),
		Build: func(c Config) ([]sdk.Factory, error) {
			table, err := parseSideInput(SideInput())
			if err != nil {
				return nil, err
			}
			p, events, par := events("q13", c)
			joined := stream.FlatMap(stream.Filter(events, "bids", isBid, par), "join", func(e Event, emit func(SideBid)) {
				if v, ok := table[e.Auction%SideInputKeys]; ok {
					emit(SideBid{Bid: e, Value: v})
				}
			}, sideBidCodec(), par)
			stream.Output(joined, answersOf("q13"), par)
			return p.Build()
		},
		Answer: func(rec sdk.Record) (Answer, error) {
			sb, err := sideBidCodec().Decode(rec.Value)
			if err != nil {
				return Answer{}, err
			}
			return Answer{Key: "bid", Text: bidText(sb.Bid) + " " + sb.Value}, nil
		},
		Expected: func(c Config) []Answer {
			var out []Answer
			generated(c, func(e Event) {
				if k := e.Auction % SideInputKeys; e.Kind == Bid && k%7 != 0 {
					out = append(out, Answer{Key: "bid", Text: bidText(e) + fmt.Sprintf(" value-%d", k*31%1000)})
				}
			})
			return out
		},
	}
}

// TimedBid is an answer of q14: a bid (its price in euro cents), the
// part of the day it was made in and the number of 'c's in its URL.
type TimedBid struct {
	Bid      Event
	TimeType string
	CCounts  int64
}

// Query 14, "calculation": the bids of 10,000 to 500,000 euros (price
// in cents, converted as q1 does, strictly between), each with the part
// of the day it was made in (a UDF of its hour, UTC: "dayTime" from 8 to
// 18 h, "nightTime" up to 6 and from 20 h, "otherTime" between) and the
// number of 'c' in its URL (Flink's q14.sql: count_char(extra, 'c');
// the events here have no extra field).
func q14Query() Query {
	c14 := codec.JSON[TimedBid]()
	return Query{Name: "q14", Output: answersOf("q14"),
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events("q14", c)
			euros := stream.Map(stream.Filter(events, "bids", isBid, par), "euros", toEuros, EventCodec(), par)
			kept := stream.Filter(euros, "range", func(e Event) bool { return e.Price > 1_000_000 && e.Price < 50_000_000 }, par)
			timed := stream.Map(kept, "timed", func(e Event) TimedBid {
				return TimedBid{Bid: e, TimeType: bidTimeType(e.DateTime.UTC().Hour()), CCounts: int64(strings.Count(e.URL, "c"))}
			}, c14, par)
			stream.Output(timed, answersOf("q14"), par)
			return p.Build()
		},
		Answer: func(rec sdk.Record) (Answer, error) {
			tb, err := c14.Decode(rec.Value)
			if err != nil {
				return Answer{}, err
			}
			return timedText(tb.Bid, tb.TimeType, tb.CCounts), nil
		},
		Expected: func(c Config) []Answer {
			var out []Answer
			generated(c, func(e Event) {
				if e.Kind != Bid {
					return
				}
				e.Price = e.Price * 908 / 1000
				if e.Price <= 1_000_000 || e.Price >= 50_000_000 {
					return
				}
				kind := "otherTime"
				switch h := e.DateTime.UTC().Hour(); {
				case h >= 8 && h <= 18:
					kind = "dayTime"
				case h <= 6 || h >= 20:
					kind = "nightTime"
				}
				n := int64(0)
				for _, r := range e.URL {
					if r == 'c' {
						n++
					}
				}
				out = append(out, timedText(e, kind, n))
			})
			return out
		},
	}
}

// bidTimeType is q14's UDF: the part of the day of an hour.
func bidTimeType(hour int) string {
	switch {
	case hour >= 8 && hour <= 18:
		return "dayTime"
	case hour <= 6 || hour >= 20:
		return "nightTime"
	}
	return "otherTime"
}

func timedText(e Event, kind string, cs int64) Answer {
	return Answer{Key: "bid", Text: fmt.Sprintf("%s %s %d", bidText(e), kind, cs)}
}
