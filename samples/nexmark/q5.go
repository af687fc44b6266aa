package nexmark

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/window"
)

// Operator and stream names of query 5.
const (
	SourceName          = "nexmark-source"
	EventsStream        = "nexmark-events"
	Q5BidsName          = "q5-bids"
	Q5BidsStream        = "q5-bids"
	Q5CountsName        = "q5-counts"
	Q5AuctionCounts     = "q5-auction-counts"
	Q5HotName           = "q5-hot"
	Q5HotItems          = "q5-hot-items"
	Q5Size, Q5Slide     = 60 * time.Second, 10 * time.Second
	DefaultEventsPerSec = 10000
)

// Config describes a run.
type Config struct {
	// Events is the number of events generated; the sources then end.
	Events int64
	// EventsPerSecond is the event-time rate; 0 means 10,000 (Nexmark's
	// default first event rate).
	EventsPerSecond int64
	// Seed draws the events.
	Seed uint64
	// Start is the event time of event 0; zero means 2026-01-01 UTC.
	Start time.Time
	// Parallelism of every stage; 0 means 1.
	Parallelism int
	// Batch is the number of events per source Poll; 0 means 1024.
	Batch int
	// Rate limits each source instance to this many events per second
	// of wall time; 0 means unthrottled.
	Rate float64
}

// WithDefaults fills in zero fields.
func (c Config) WithDefaults() Config {
	if c.EventsPerSecond == 0 {
		c.EventsPerSecond = DefaultEventsPerSec
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if c.Parallelism == 0 {
		c.Parallelism = 1
	}
	return c
}

// Generator returns the run's generator.
func (c Config) Generator() *Generator {
	c = c.WithDefaults()
	return &Generator{Seed: c.Seed, Start: c.Start, EventsPerSecond: c.EventsPerSecond}
}

// Q5 returns query 5's operators: source, bids, counts and hot.
func Q5(c Config) ([]sdk.Factory, error) {
	c = c.WithDefaults()
	gen := c.Generator()
	counts, err := window.New(window.Config{Name: Q5CountsName, Input: Q5BidsStream, Output: Q5AuctionCounts,
		Windows: window.Hopping(Q5Size, Q5Slide), Parallelism: c.Parallelism,
		// Regroup by window: key the window's end, value "auction count".
		Result: func(rec sdk.Record, _, end time.Time) sdk.Record {
			v := make([]byte, 0, len(rec.Key)+1+len(rec.Value))
			v = append(append(append(v, rec.Key...), ' '), rec.Value...)
			return sdk.Record{Key: strconv.AppendInt(nil, end.UnixNano(), 10), Value: v}
		}}, window.Count())
	if err != nil {
		return nil, err
	}
	// Every result of hopping window [s, s+60 s) has event time s+60 s−1 ns
	// and the key s+60 s: one tumbling window of one slide per key holds
	// exactly them, and closes when the counts do.
	hot, err := window.New(window.Config{Name: Q5HotName, Input: Q5AuctionCounts, Output: Q5HotItems,
		Windows: window.Tumbling(Q5Slide), Parallelism: c.Parallelism}, window.Aggregator[Hot](hotAgg{}))
	if err != nil {
		return nil, err
	}
	return []sdk.Factory{
		gen.Source(c.Events, c.Parallelism, c.Batch, c.Rate),
		stage{name: Q5BidsName, input: EventsStream, output: Q5BidsStream, parallelism: c.Parallelism, process: bids}.factory(),
		counts,
		hot,
	}, nil
}

// bids keeps the bids and keys them by auction (stage q5-bids).
func bids(ctx sdk.Context, rec sdk.Record) error {
	auction, _, _, ok, err := DecodeBid(rec.Value)
	if err != nil || !ok {
		return err
	}
	return ctx.Produce(Q5BidsStream, sdk.Record{Key: strconv.AppendInt(nil, auction, 10)})
}

// stage is a stateless operator of a query: process handles each record
// of input, producing to output.
type stage struct {
	name, input, output string
	parallelism         int
	process             func(ctx sdk.Context, rec sdk.Record) error
}

// factory returns s's factory.
func (s stage) factory() sdk.Factory { return func() sdk.Operator { return s } }

// Metadata implements sdk.Operator.
func (s stage) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.name, Inputs: []sdk.Input{{Stream: s.input}}, Outputs: []string{s.output}, Parallelism: s.parallelism}
}

// Init implements sdk.Operator.
func (stage) Init(sdk.Context) error { return nil }

// ProcessRecord implements sdk.Operator.
func (s stage) ProcessRecord(ctx sdk.Context, rec sdk.Record) error { return s.process(ctx, rec) }

// ProcessTimer implements sdk.Operator.
func (stage) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// Hot is the answer for one window: the auctions with the most bids
// (ascending) and that number.
type Hot struct {
	Auctions []int64
	Bids     int64
}

// String formats h as its result value: "a1,a2 n".
func (h Hot) String() string {
	ids := make([]string, len(h.Auctions))
	for j, a := range h.Auctions {
		ids[j] = strconv.FormatInt(a, 10)
	}
	return strings.Join(ids, ",") + " " + strconv.FormatInt(h.Bids, 10)
}

// hotAgg keeps the maximum count of a window and its auctions.
type hotAgg struct{}

func (hotAgg) Zero() Hot { return Hot{} }

func (hotAgg) Add(h Hot, rec sdk.Record) (Hot, error) {
	a, n, ok := strings.Cut(string(rec.Value), " ")
	auction, err1 := strconv.ParseInt(a, 10, 64)
	count, err2 := strconv.ParseInt(n, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return h, fmt.Errorf("nexmark: bad auction count %q", rec.Value)
	}
	return hotAgg{}.Merge(h, Hot{Auctions: []int64{auction}, Bids: count}), nil
}

func (hotAgg) Merge(a, b Hot) Hot {
	switch {
	case b.Bids > a.Bids:
		return Hot{Auctions: slices.Clone(b.Auctions), Bids: b.Bids}
	case b.Bids == a.Bids:
		out := slices.Concat(a.Auctions, b.Auctions)
		slices.Sort(out)
		return Hot{Auctions: slices.Compact(out), Bids: a.Bids}
	}
	return a
}

func (hotAgg) Result(h Hot) []byte { return []byte(h.String()) }

func (hotAgg) Encode(dst []byte, h Hot) []byte { return append(dst, h.String()...) }

func (hotAgg) Decode(b []byte) (Hot, error) {
	ids, n, ok := strings.Cut(string(b), " ")
	bids, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil {
		return Hot{}, fmt.Errorf("nexmark: bad hot-items accumulator %q", b)
	}
	h := Hot{Bids: bids}
	for _, s := range strings.Split(ids, ",") {
		if s == "" {
			continue
		}
		a, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Hot{}, fmt.Errorf("nexmark: bad hot-items accumulator %q", b)
		}
		h.Auctions = append(h.Auctions, a)
	}
	return h, nil
}

// Q5Result decodes a q5-hot-items record: the end of the hopping window
// it answers for, and the answer.
func Q5Result(rec sdk.Record) (end time.Time, h Hot, err error) {
	ns, err := strconv.ParseInt(string(rec.Key), 10, 64)
	if err != nil {
		return end, h, fmt.Errorf("nexmark: bad window key %q", rec.Key)
	}
	h, err = hotAgg{}.Decode(rec.Value)
	return time.Unix(0, ns), h, err
}

// Q5Expected computes query 5's exact answer on its own: per hopping
// window end (Unix ns), the auctions with the most bids.
func Q5Expected(c Config) map[int64]Hot {
	c = c.WithDefaults()
	gen := c.Generator()
	counts := map[int64]map[int64]int64{} // window end → auction → bids
	size, slide := int64(Q5Size), int64(Q5Slide)
	for i := range c.Events {
		e := gen.Event(i)
		if e.Kind != Bid {
			continue
		}
		t := e.DateTime.UnixNano()
		for start := t - ((t%slide)+slide)%slide; start+size > t; start -= slide {
			end := start + size
			if counts[end] == nil {
				counts[end] = map[int64]int64{}
			}
			counts[end][e.Auction]++
		}
	}
	out := map[int64]Hot{}
	for end, per := range counts {
		var h Hot
		for a, n := range per {
			switch {
			case n > h.Bids:
				h = Hot{Auctions: []int64{a}, Bids: n}
			case n == h.Bids:
				h.Auctions = append(h.Auctions, a)
			}
		}
		slices.Sort(h.Auctions)
		out[end] = h
	}
	return out
}
