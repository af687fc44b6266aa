package nexmark

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/window"
)

// Operator and stream names of query 8 (its source is query 5's).
const (
	Q8KeyedName    = "q8-keyed"
	Q8KeyedStream  = "q8-keyed"
	Q8JoinName     = "q8-join"
	Q8WindowStream = "q8-windows"
	Q8NewUsersName = "q8-new-users"
	Q8NewUsers     = "q8-new-users"
	// Q8Window is the size of q8's tumbling windows (Nexmark's
	// windowSizeSec).
	Q8Window = 10 * time.Second
)

// Values of q8-keyed records: a person registering (followed by the
// name) and an auction by the key's person.
const (
	sidePerson = 'p'
	sideSeller = 'a'
)

// Q8 returns query 8's operators: source, keyed, join and new users.
//
// The join is a window.Tumbling operator: the window package reads one
// stream, so q8-keyed puts both sides of the join on one stream keyed by
// person id (as Beam's Query8 does with CoGroupByKey), and the window's
// accumulator records which sides it saw. A window seen from one side
// only still has a result; q8-new-users drops it.
func Q8(c Config) ([]sdk.Factory, error) {
	c = c.WithDefaults()
	join, err := window.New(window.Config{Name: Q8JoinName, Input: Q8KeyedStream, Output: Q8WindowStream,
		Windows: window.Tumbling(Q8Window), Parallelism: c.Parallelism}, window.Aggregator[sides](sidesAgg{}))
	if err != nil {
		return nil, err
	}
	return []sdk.Factory{
		c.Generator().Source(c.Events, c.Parallelism, c.Batch, c.Rate),
		stage{name: Q8KeyedName, input: EventsStream, output: Q8KeyedStream, parallelism: c.Parallelism, process: keyed}.factory(),
		join,
		stage{name: Q8NewUsersName, input: Q8WindowStream, output: Q8NewUsers, parallelism: c.Parallelism, process: newUsers}.factory(),
	}, nil
}

// keyed keeps the persons and the auctions, both keyed by person id (a
// person's id, an auction's seller), on one stream for q8's join (stage
// q8-keyed).
func keyed(ctx sdk.Context, rec sdk.Record) error {
	e, err := Decode(rec.Value)
	if err != nil {
		return err
	}
	switch e.Kind {
	case Person:
		return ctx.Produce(Q8KeyedStream, sdk.Record{Key: strconv.AppendInt(nil, e.ID, 10), Value: append([]byte{sidePerson}, e.Name...)})
	case Auction:
		return ctx.Produce(Q8KeyedStream, sdk.Record{Key: strconv.AppendInt(nil, e.Seller, 10), Value: []byte{sideSeller}})
	}
	return nil
}

// sides is what one person id's window saw: the person registering (with
// the name) and auctions the person opened.
type sides struct {
	Name           string
	Person, Seller bool
}

// sidesAgg is q8's join accumulator, encoded as a flags byte (1: person,
// 2: seller) then the name.
type sidesAgg struct{}

func (sidesAgg) Zero() sides { return sides{} }

func (sidesAgg) Add(s sides, rec sdk.Record) (sides, error) {
	switch {
	case len(rec.Value) > 0 && rec.Value[0] == sidePerson:
		s.Person, s.Name = true, string(rec.Value[1:])
	case len(rec.Value) == 1 && rec.Value[0] == sideSeller:
		s.Seller = true
	default:
		return s, fmt.Errorf("nexmark: bad q8 join input %q for person %q", rec.Value, rec.Key)
	}
	return s, nil
}

func (sidesAgg) Merge(a, b sides) sides {
	if b.Person {
		a.Person, a.Name = true, b.Name
	}
	a.Seller = a.Seller || b.Seller
	return a
}

func (sidesAgg) Result(s sides) []byte { return sidesAgg{}.Encode(nil, s) }

func (sidesAgg) Encode(dst []byte, s sides) []byte {
	var flags byte
	if s.Person {
		flags |= 1
	}
	if s.Seller {
		flags |= 2
	}
	return append(append(dst, flags), s.Name...)
}

func (sidesAgg) Decode(b []byte) (sides, error) {
	if len(b) == 0 || b[0] > 3 {
		return sides{}, fmt.Errorf("nexmark: bad q8 join accumulator %q", b)
	}
	return sides{Person: b[0]&1 != 0, Seller: b[0]&2 != 0, Name: string(b[1:])}, nil
}

// newUsers keeps the q8-join windows that saw a person both register and
// open an auction, as q8-new-users records: the person id as key,
// "<window start, Unix ns> <name>" as value (stage q8-new-users).
func newUsers(ctx sdk.Context, rec sdk.Record) error {
	s, err := sidesAgg{}.Decode(rec.Value)
	if err != nil {
		return err
	}
	if !s.Person || !s.Seller {
		return nil
	}
	start, _, ok := window.Bounds(rec)
	if !ok {
		return fmt.Errorf("nexmark: q8 window result for person %q without window bounds", rec.Key)
	}
	return ctx.Produce(Q8NewUsers, sdk.Record{Key: rec.Key, Value: fmt.Appendf(nil, "%d %s", start.UnixNano(), s.Name)})
}

// NewUser is one answer of query 8: a person who registered and opened an
// auction in the tumbling window starting at Start.
type NewUser struct {
	Person int64
	Name   string
	Start  time.Time
}

// String formats u as "person name@start", start in UTC.
func (u NewUser) String() string {
	return fmt.Sprintf("%d %s@%s", u.Person, u.Name, u.Start.UTC().Format(time.RFC3339Nano))
}

// Q8Result decodes a q8-new-users record.
func Q8Result(rec sdk.Record) (NewUser, error) {
	id, err1 := strconv.ParseInt(string(rec.Key), 10, 64)
	ns, name, ok := strings.Cut(string(rec.Value), " ")
	start, err2 := strconv.ParseInt(ns, 10, 64)
	if err1 != nil || err2 != nil || !ok {
		return NewUser{}, fmt.Errorf("nexmark: bad q8 answer %q: %q", rec.Key, rec.Value)
	}
	return NewUser{Person: id, Name: name, Start: time.Unix(0, start)}, nil
}

// Q8Expected computes query 8's exact answer on its own: the persons who
// opened an auction in the tumbling window (of Q8Window, aligned on the
// Unix epoch) they registered in, by window start then person.
func Q8Expected(c Config) []NewUser {
	c = c.WithDefaults()
	gen := c.Generator()
	type key struct{ person, start int64 }
	people := map[key]string{}
	sold := map[key]bool{}
	size := int64(Q8Window)
	for i := range c.Events {
		e := gen.Event(i)
		t := e.DateTime.UnixNano()
		start := t - ((t%size)+size)%size
		switch e.Kind {
		case Person:
			people[key{e.ID, start}] = e.Name
		case Auction:
			sold[key{e.Seller, start}] = true
		}
	}
	var out []NewUser
	for k, name := range people {
		if sold[k] {
			out = append(out, NewUser{Person: k.person, Name: name, Start: time.Unix(0, k.start)})
		}
	}
	slices.SortFunc(out, func(a, b NewUser) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.Person, b.Person))
	})
	return out
}
