package nexmark

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/stream"
	"github.com/sluicehq/sluice/sdk/window"
)

// Q11Gap is the gap of q11's sessions (Flink's q11.sql: 10 s).
const Q11Gap = 10 * time.Second

// Query 11, "user sessions": per bidder and session of bids (bids less
// than or exactly Q11Gap apart), the number of bids, with the session's
// start (its first bid) and end (its last bid + Q11Gap) (Flink's
// q11.sql: GROUP BY bidder, SESSION(dateTime, INTERVAL '10' SECOND)).
func q11Query() Query {
	return Query{Name: "q11", Output: answersOf("q11"),
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events("q11", c)
			byBidder := stream.KeyBy(stream.Filter(events, "bids", isBid, par), "by-bidder", func(e Event) int64 { return e.Bidder }, codec.Int64(), par)
			stream.Output(stream.Aggregate(byBidder, "sessions", window.Session(Q11Gap), stream.Count[Event](), codec.Int64(), par), answersOf("q11"), par)
			return p.Build()
		},
		Answer: func(rec sdk.Record) (Answer, error) {
			bidder, err1 := codec.Int64().Decode(rec.Key)
			n, err2 := codec.Int64().Decode(rec.Value)
			start, end, ok := window.Bounds(rec)
			if err1 != nil || err2 != nil || !ok {
				return Answer{}, fmt.Errorf("nexmark: bad q11 answer %q: %q (window bounds: %t)", rec.Key, rec.Value, ok)
			}
			return sessionText(bidder, start, end, n), nil
		},
		Expected: func(c Config) []Answer {
			times := map[int64][]time.Time{} // per bidder, in order
			generated(c, func(e Event) {
				if e.Kind == Bid {
					times[e.Bidder] = append(times[e.Bidder], e.DateTime)
				}
			})
			var out []Answer
			for bidder, ts := range times {
				first, n := 0, int64(0)
				for i, t := range ts {
					if i > 0 && t.Sub(ts[i-1]) > Q11Gap {
						out = append(out, sessionText(bidder, ts[first], ts[i-1].Add(Q11Gap), n))
						first, n = i, 0
					}
					n++
				}
				out = append(out, sessionText(bidder, ts[first], ts[len(ts)-1].Add(Q11Gap), n))
			}
			return out
		},
	}
}

func sessionText(bidder int64, start, end time.Time, n int64) Answer {
	return Answer{Key: fmt.Sprintf("bidder %d from %s to %s", bidder, start.UTC().Format(time.TimeOnly+".000"), end.UTC().Format(time.TimeOnly+".000")),
		Text: strconv.FormatInt(n, 10)}
}

// Q12Window is the size of q12's processing-time windows (Flink's
// q12.sql: 10 s).
const Q12Window = 10 * time.Second

// BidderCount is an answer of q12: the bids of a bidder that arrived in
// a processing-time window.
type BidderCount struct {
	Bidder, Bids int64
	Start, End   time.Time
}

// bidderCountCodec encodes a BidderCount as four varints (the bounds in
// Unix ns).
func bidderCountCodec() codec.Codec[BidderCount] {
	return codec.Codec[BidderCount]{Name: "nexmark-bidder-count",
		Encode: func(dst []byte, b BidderCount) ([]byte, error) {
			return appendVarints(dst, b.Bidder, b.Bids, b.Start.UnixNano(), b.End.UnixNano()), nil
		},
		Decode: func(b []byte) (BidderCount, error) {
			var v [4]int64
			if !readVarints(b, v[:]) {
				return BidderCount{}, codec.NewDecodeError[BidderCount]("nexmark-bidder-count", b, errCorrupt)
			}
			return BidderCount{Bidder: v[0], Bids: v[1], Start: time.Unix(0, v[2]).UTC(), End: time.Unix(0, v[3]).UTC()}, nil
		}}
}

// Query 12, "processing time windows": per bidder and 10 s tumbling
// window of processing time (when the bid reached the counting stage, by
// the wall clock), the number of bids (Flink's q12.sql: GROUP BY bidder,
// TUMBLE(PROCTIME(), INTERVAL '10' SECOND)). sdk/window's windows are of
// event time, so this is a Process stage: per bidder the window being
// filled and its count, a processing-time timer at its end handing it on,
// and an event-time timer at the end of time handing on the last one when
// the input ends (processing-time timers do not outlive a bounded run).
//
// Which window a bid lands in depends on when it arrives, so the exact
// answer is checkable only in sum: a run's windows must be whole 10 s
// windows of the wall clock, at most one per bidder and window, and
// their counts must add up, per bidder, to the bidder's bids (Query.Summed).
func q12Query() Query {
	type filling struct{ End, Bids int64 } // the window's end (Unix ns) and count
	return Query{Name: "q12", Output: answersOf("q12"), Summed: true,
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events("q12", c)
			byBidder := stream.KeyBy(stream.Filter(events, "bids", isBid, par), "by-bidder", func(e Event) int64 { return e.Bidder }, codec.Int64(), par)
			current := stream.NewValue("window", codec.JSON[filling]())
			type ctx = stream.Context[int64, BidderCount]
			emit := func(ctx *ctx, bidder int64) error {
				w, ok, err := current.Get(ctx)
				if err != nil || !ok {
					return err
				}
				if err := current.Clear(ctx); err != nil {
					return err
				}
				return ctx.Emit(BidderCount{Bidder: bidder, Bids: w.Bids, Start: time.Unix(0, w.End).Add(-Q12Window).UTC(), End: time.Unix(0, w.End).UTC()})
			}
			counts := stream.Process(byBidder, "counts", stream.Processor[int64, Event, BidderCount]{
				Record: func(ctx *ctx, bidder int64, _ Event) error {
					now := time.Now()
					end := now.Truncate(Q12Window).Add(Q12Window).UnixNano()
					w, ok, err := current.Get(ctx)
					switch {
					case err != nil:
						return err
					case ok && w.End != end: // its timer is due
						if err := emit(ctx, bidder); err != nil {
							return err
						}
						ok = false
					}
					if !ok {
						w = filling{End: end}
						if err := ctx.SetTimer("end", time.Unix(0, end)); err != nil {
							return err
						}
						if err := ctx.SetEventTimer("input-end", time.Unix(0, math.MaxInt64-1)); err != nil {
							return err
						}
					}
					w.Bids++
					return current.Set(ctx, w)
				},
				Timer:      func(ctx *ctx, bidder int64, _ string, _ time.Time) error { return emit(ctx, bidder) },
				EventTimer: func(ctx *ctx, bidder int64, _ string, _ time.Time) error { return emit(ctx, bidder) },
			}, bidderCountCodec(), par)
			stream.Output(counts, answersOf("q12"), par)
			return p.Build()
		},
		Answer: func(rec sdk.Record) (Answer, error) {
			b, err := bidderCountCodec().Decode(rec.Value)
			if err != nil {
				return Answer{}, err
			}
			if b.End.Sub(b.Start) != Q12Window || !b.Start.Equal(b.Start.Truncate(Q12Window)) || b.Bids <= 0 {
				return Answer{}, fmt.Errorf("nexmark: q12 answer %+v is not a count of a whole %v window", b, Q12Window)
			}
			return Answer{Key: fmt.Sprintf("bidder %d", b.Bidder), Text: strconv.FormatInt(b.Bids, 10), Seq: b.Start.UnixNano()}, nil
		},
		Expected: func(c Config) []Answer {
			bids := map[int64]int64{}
			generated(c, func(e Event) {
				if e.Kind == Bid {
					bids[e.Bidder]++
				}
			})
			var out []Answer
			for bidder, n := range bids {
				out = append(out, Answer{Key: fmt.Sprintf("bidder %d", bidder), Text: strconv.FormatInt(n, 10)})
			}
			return out
		},
	}
}
