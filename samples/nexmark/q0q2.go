package nexmark

import (
	"fmt"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/stream"
)

// Query 0, "pass through": every bid, as it came (Flink's q0.sql: SELECT
// auction, bidder, price, dateTime, extra FROM bid). It measures the
// runtime's cost of moving and decoding an event.
func q0Query() Query {
	return Query{Name: "q0", Output: answersOf("q0"), Answer: bidAnswer,
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events("q0", c)
			bids := stream.Filter(events, "bids", isBid, par)
			stream.Output(bids, answersOf("q0"), par)
			return p.Build()
		},
		Expected: func(c Config) []Answer { return expectedBids(c, func(e Event) (Event, bool) { return e, true }) },
	}
}

// Query 1, "currency conversion": every bid with its price in euros
// (Flink's q1.sql: 0.908 * price; here in whole cents, rounded down, as
// Beam's Query1 keeps prices integral).
func q1Query() Query {
	return Query{Name: "q1", Output: answersOf("q1"), Answer: bidAnswer,
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events("q1", c)
			euros := stream.Map(stream.Filter(events, "bids", isBid, par), "euros", toEuros, EventCodec(), par)
			stream.Output(euros, answersOf("q1"), par)
			return p.Build()
		},
		Expected: func(c Config) []Answer {
			return expectedBids(c, func(e Event) (Event, bool) { return toEuros(e), true })
		},
	}
}

// toEuros converts a bid's price from dollars to euros.
func toEuros(e Event) Event {
	e.Price = e.Price * 908 / 1000
	return e
}

// Query 2, "selection": the bids on every 123rd auction (Flink's q2.sql:
// WHERE MOD(auction, 123) = 0).
func q2Query() Query {
	return Query{Name: "q2", Output: answersOf("q2"), Answer: bidAnswer,
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events("q2", c)
			stream.Output(stream.Filter(events, "selected", selected, par), answersOf("q2"), par)
			return p.Build()
		},
		Expected: func(c Config) []Answer { return expectedBids(c, func(e Event) (Event, bool) { return e, selected(e) }) },
	}
}

// selected reports whether e is a bid q2 keeps.
func selected(e Event) bool { return e.Kind == Bid && e.Auction%123 == 0 }

// bidAnswer decodes an answer of q0, q1 or q2: a bid.
func bidAnswer(rec sdk.Record) (Answer, error) {
	e, err := Decode(rec.Value)
	if err != nil || e.Kind != Bid {
		return Answer{}, fmt.Errorf("nexmark: bad bid answer %q: %v", rec.Value, err)
	}
	return Answer{Key: "bid", Text: bidText(e)}, nil
}

// expectedBids returns the answers f makes of the run's bids.
func expectedBids(c Config, f func(Event) (Event, bool)) []Answer {
	var out []Answer
	generated(c, func(e Event) {
		if e.Kind != Bid {
			return
		}
		if e, ok := f(e); ok {
			out = append(out, Answer{Key: "bid", Text: bidText(e)})
		}
	})
	return out
}
