package nexmark

import (
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/stream"
)

// LocalItem is an answer of query 3: an auction of category 10 by a
// seller in Oregon, Idaho or California.
type LocalItem struct {
	Name    string `json:"name"`
	City    string `json:"city"`
	State   string `json:"state"`
	Auction int64  `json:"auction"`
}

// Query 3, "local item suggestion": the auctions of category 10 by
// sellers in OR, ID or CA, with the seller's name, city and state
// (Flink's q3.sql: an inner join of auctions and persons on seller = id,
// not windowed). Persons and auctions are keyed by person id; the join
// keeps each matching person, and the auctions that came before their
// seller (the generator draws sellers up to 10 people ahead), for good, as
// an unwindowed join does.
func q3Query() Query {
	return Query{Name: "q3", Output: answersOf("q3"), Answer: localItemAnswer,
		Build: func(c Config) ([]sdk.Factory, error) {
			p, events, par := events("q3", c)
			local := stream.Filter(events, "local", q3Keeps, par)
			bySeller := stream.KeyBy(local, "by-person", func(e Event) int64 {
				if e.Kind == Person {
					return e.ID
				}
				return e.Seller
			}, codec.Int64(), par)
			person := stream.NewValue("person", EventCodec())
			early := stream.NewValue("early-auctions", codec.JSON[[]int64]())
			joined := stream.Process(bySeller, "join", stream.Processor[int64, Event, LocalItem]{
				Record: func(ctx *stream.Context[int64, LocalItem], _ int64, e Event) error {
					if e.Kind == Person {
						auctions, _, err := early.Get(ctx)
						if err != nil {
							return err
						}
						for _, a := range auctions {
							if err := ctx.Emit(LocalItem{e.Name, e.City, e.State, a}); err != nil {
								return err
							}
						}
						if err := early.Clear(ctx); err != nil {
							return err
						}
						return person.Set(ctx, e)
					}
					seller, ok, err := person.Get(ctx)
					switch {
					case err != nil:
						return err
					case ok:
						return ctx.Emit(LocalItem{seller.Name, seller.City, seller.State, e.ID})
					}
					auctions, _, err := early.Get(ctx)
					if err != nil {
						return err
					}
					return early.Set(ctx, append(auctions, e.ID))
				},
			}, codec.JSON[LocalItem](), par)
			stream.Output(joined, answersOf("q3"), par)
			return p.Build()
		},
		Expected: func(c Config) []Answer {
			people := map[int64]Event{}
			var auctions []Event
			generated(c, func(e Event) {
				switch {
				case e.Kind == Person:
					people[e.ID] = e
				case e.Kind == Auction && e.Category == 10:
					auctions = append(auctions, e)
				}
			})
			var out []Answer
			for _, a := range auctions {
				if p, ok := people[a.Seller]; ok && slices.Contains(q3States, p.State) {
					out = append(out, localItemText(LocalItem{p.Name, p.City, p.State, a.ID}))
				}
			}
			return out
		},
	}
}

// q3States are the states of q3's sellers.
var q3States = []string{"OR", "ID", "CA"}

// q3Keeps reports whether e is a person or an auction q3 joins.
func q3Keeps(e Event) bool {
	return e.Kind == Person && slices.Contains(q3States, e.State) || e.Kind == Auction && e.Category == 10
}

// localItemAnswer decodes an answer of q3.
func localItemAnswer(rec sdk.Record) (Answer, error) {
	l, err := codec.JSON[LocalItem]().Decode(rec.Value)
	if err != nil {
		return Answer{}, fmt.Errorf("nexmark: bad q3 answer: %w", err)
	}
	return localItemText(l), nil
}

func localItemText(l LocalItem) Answer {
	return Answer{Key: fmt.Sprint("auction ", l.Auction), Text: fmt.Sprintf("%s, %s %s", l.Name, l.City, l.State)}
}
