// Package ysb is the Yahoo Streaming Benchmark on Sluice: JSON ad events →
// keep the views → ad → campaign (a static table of 100 campaigns × 10
// ads) → 10 s tumbling event-time windows of view counts per campaign →
// sink.
//
//	ysb-source ──ysb-events──▶ ysb-parse ──ysb-views──▶ ysb-windows ──ysb-counts──▶ ysb-sink
//	 (JSON events)     (decode, filter, join;     (window.Tumbling(10 s),      (Results)
//	                    key: campaign)             window.Count())
//
// The generator (Generator, Source) is deterministic: event i is a
// function of the seed and i, so Expected computes the exact answer on its
// own, without JSON or windows, and the tests compare the sink's results
// with it exactly. The parse stage decodes JSON with Fields, a scanner
// that falls back to encoding/json for anything unusual (BenchmarkDecode
// compares them).
//
// TypedOperators is the same pipeline written on sdk/stream (typed.go):
// AdCodec decodes the events (with Fields) and looks up the ads, and the
// parse operator is three chained stages, Filter → Map → KeyBy, before an
// Aggregate; the tests run both versions against Expected.
package ysb

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/window"
)

// Operator and stream names.
const (
	SourceName   = "ysb-source"
	ParseName    = "ysb-parse"
	WindowsName  = "ysb-windows"
	SinkName     = "ysb-sink"
	EventsStream = "ysb-events"
	ViewsStream  = "ysb-views"
	CountsStream = "ysb-counts"
)

// WindowSize is YSB's window: 10 s tumbling.
const WindowSize = 10 * time.Second

// Config describes a run.
type Config struct {
	// Events is the number of events generated; the sources then end.
	Events int64
	// EventsPerSecond is the event-time density: event i happens at
	// Start + i/EventsPerSecond; 0 means 10,000.
	EventsPerSecond int64
	// Seed draws the table and the events.
	Seed uint64
	// Start is the event time of event 0; zero means 2026-01-01 UTC.
	Start time.Time
	// Parallelism of every stage; 0 means 1. SourceParallelism, when
	// set, overrides it for the source.
	Parallelism, SourceParallelism int
	// Batch is the number of events per source Poll; 0 means 1024.
	Batch int
	// Rate limits each source instance to this many events per second
	// (processing time); 0 means unlimited.
	Rate float64
}

// WithDefaults fills in zero fields.
func (c Config) WithDefaults() Config {
	if c.EventsPerSecond == 0 {
		c.EventsPerSecond = 10000
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if c.Parallelism == 0 {
		c.Parallelism = 1
	}
	if c.SourceParallelism == 0 {
		c.SourceParallelism = c.Parallelism
	}
	return c
}

// Generator returns the run's event generator.
func (c Config) Generator() *Generator {
	c = c.WithDefaults()
	return &Generator{Seed: c.Seed, Start: c.Start, EventsPerSecond: c.EventsPerSecond, Table: NewTable(c.Seed)}
}

// Operators returns the pipeline's factories: source, parse, windows and,
// when results is not nil, a sink writing to it.
func Operators(c Config, results *Results) ([]sdk.Factory, error) {
	c = c.WithDefaults()
	gen := c.Generator()
	windows, err := window.New(window.Config{Name: WindowsName, Input: ViewsStream, Output: CountsStream,
		Windows: window.Tumbling(WindowSize), Parallelism: c.Parallelism}, window.Count())
	if err != nil {
		return nil, err
	}
	fs := []sdk.Factory{
		gen.Source(c.Events, c.SourceParallelism, c.Batch, c.Rate),
		func() sdk.Operator { return Parse{Table: gen.Table, Parallelism: c.Parallelism} },
		windows,
	}
	if results != nil {
		fs = append(fs, func() sdk.Operator { return Sink{Results: results, Parallelism: c.Parallelism} })
	}
	return fs, nil
}

// Parse decodes an event, keeps views and maps the ad to its campaign: it
// produces one record per view, keyed by campaign id, with the event's
// event time. An event with an unknown ad fails (and is dead-lettered).
type Parse struct {
	Table       *Table
	Parallelism int
}

var viewType = []byte("view")

// Metadata implements sdk.Operator.
func (p Parse) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: ParseName, Inputs: []sdk.Input{{Stream: EventsStream, Routing: sdk.Shuffle}},
		Outputs: []string{ViewsStream}, Parallelism: p.Parallelism}
}

// Init implements sdk.Operator.
func (Parse) Init(sdk.Context) error { return nil }

// ProcessRecord implements sdk.Operator.
func (p Parse) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	et, ad, err := Fields(rec.Value)
	if err != nil {
		return err
	}
	if !bytes.Equal(et, viewType) {
		return nil
	}
	camp, ok := p.Table.CampaignOf[string(ad)]
	if !ok {
		return fmt.Errorf("ysb: unknown ad_id %q", ad)
	}
	return ctx.Produce(ViewsStream, sdk.Record{Key: []byte(camp)})
}

// ProcessTimer implements sdk.Operator.
func (Parse) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// WindowKey names one window of one campaign.
type WindowKey struct {
	Campaign string
	Start    int64 // Unix milliseconds
}

// Results collects the sink's window counts; it is safe for concurrent
// use by the sink's instances.
type Results struct {
	mu     sync.Mutex
	counts map[WindowKey]int64
	dups   []WindowKey
	n      int64
}

// NewResults returns an empty Results.
func NewResults() *Results { return &Results{counts: map[WindowKey]int64{}} }

// Add records window k's count; a second count for the same window is
// kept as a duplicate (YSB emits each window once).
func (r *Results) Add(k WindowKey, count int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.counts[k]; ok {
		r.dups = append(r.dups, k)
	}
	r.counts[k] = count
	r.n++
}

// Snapshot returns the counts so far, the duplicates and the number of
// results received.
func (r *Results) Snapshot() (counts map[WindowKey]int64, dups []WindowKey, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts = make(map[WindowKey]int64, len(r.counts))
	for k, v := range r.counts {
		counts[k] = v
	}
	return counts, append([]WindowKey(nil), r.dups...), r.n
}

// ResultOf decodes a window result record of the ysb-counts stream.
func ResultOf(rec sdk.Record) (WindowKey, int64, error) {
	start, _, ok := window.Bounds(rec)
	if !ok {
		return WindowKey{}, 0, fmt.Errorf("ysb: result for %q has no window bounds", rec.Key)
	}
	n, err := strconv.ParseInt(string(rec.Value), 10, 64)
	if err != nil {
		return WindowKey{}, 0, fmt.Errorf("ysb: result for %q: bad count %q", rec.Key, rec.Value)
	}
	return WindowKey{Campaign: string(rec.Key), Start: start.UnixMilli()}, n, nil
}

// Sink writes window counts to Results.
type Sink struct {
	Results     *Results
	Parallelism int
}

// Metadata implements sdk.Operator.
func (s Sink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: SinkName, Inputs: []sdk.Input{{Stream: CountsStream, Routing: sdk.GroupBy}}, Parallelism: s.Parallelism}
}

// Init implements sdk.Operator.
func (Sink) Init(sdk.Context) error { return nil }

// ProcessRecord implements sdk.Operator.
func (s Sink) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	k, n, err := ResultOf(rec)
	if err != nil {
		return err
	}
	s.Results.Add(k, n)
	return nil
}

// ProcessTimer implements sdk.Operator.
func (Sink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// Expected computes the exact answer of a run on its own (no JSON, no
// windows, no runtime): the number of view events per campaign and 10 s
// window.
func Expected(c Config) map[WindowKey]int64 {
	c = c.WithDefaults()
	gen := c.Generator()
	out := map[WindowKey]int64{}
	const size = int64(WindowSize / time.Millisecond)
	for i := range c.Events {
		e := gen.Event(i)
		if e.EventType != "view" {
			continue
		}
		start := e.EventTime - ((e.EventTime%size)+size)%size
		out[WindowKey{Campaign: gen.Table.CampaignOf[e.AdID], Start: start}]++
	}
	return out
}
