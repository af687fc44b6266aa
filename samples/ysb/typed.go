package ysb

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/stream"
	"github.com/sluicehq/sluice/sdk/window"
)

// The typed pipeline's operators (its source and sink are Operators').
const (
	TypedPipeline    = "ysb-typed"
	TypedViewsName   = TypedPipeline + ".views"   // decode, filter, campaign, key
	TypedWindowsName = TypedPipeline + ".windows" // 10 s tumbling counts
)

// Ad is what the typed pipeline reads of an event: its type, and its ad
// with the ad's campaign (strings of the Table, shared, not copied).
type Ad struct {
	EventType, AdID, Campaign string
}

// TypedOperators is Operators written on sdk/stream: the same source,
// windows and sink, the parse stage as three chained stages (a decode
// failure or an unknown ad dead-letters the event with AdCodec's error):
//
//	ysb-source ──ysb-events──▶ ysb-typed.views ──ysb-typed.by-campaign──▶ ysb-typed.windows ──ysb-counts──▶ ysb-sink
//	                           Filter(views) → Map(campaign) → KeyBy      Aggregate(Tumbling(10 s), Count)
func TypedOperators(c Config, results *Results) ([]sdk.Factory, error) {
	c = c.WithDefaults()
	gen := c.Generator()
	par := stream.Parallelism(c.Parallelism)
	p := stream.New(TypedPipeline)
	ads := stream.FromSource(p, "events", gen.Source(c.Events, c.SourceParallelism, c.Batch, c.Rate), AdCodec(gen.Table))
	views := stream.Filter(ads, "views", func(a Ad) bool { return a.EventType == "view" }, par)
	camps := stream.Map(views, "campaign", func(a Ad) string { return a.Campaign }, codec.String())
	byCamp := stream.KeyBy(camps, "by-campaign", func(c string) string { return c }, codec.String())
	counts := stream.Aggregate(byCamp, "windows", window.Tumbling(WindowSize), stream.Count[string](), Decimal(), par)
	if results == nil {
		stream.Output(counts, CountsStream)
	} else {
		stream.To(counts, "sink", func() sdk.Operator { return Sink{Results: results, Parallelism: c.Parallelism} })
	}
	return p.Build()
}

// AdCodec decodes a JSON event with Fields and looks its ad up in t; an
// event that is not JSON, or whose ad is not in t, fails to decode (so
// sdk/stream dead-letters it with this error). It encodes an Ad as
// {"event_type":…,"ad_id":…}.
func AdCodec(t *Table) codec.Codec[Ad] {
	const name = "ysb-ad"
	ads := make(map[string]Ad, len(t.Ads))
	for _, ad := range t.Ads {
		ads[ad] = Ad{AdID: ad, Campaign: t.CampaignOf[ad]}
	}
	return codec.Codec[Ad]{
		Name: name,
		Encode: func(dst []byte, a Ad) ([]byte, error) {
			dst = append(dst, `{"event_type":`...)
			dst = strconv.AppendQuote(dst, a.EventType)
			dst = append(dst, `,"ad_id":`...)
			dst = strconv.AppendQuote(dst, a.AdID)
			return append(dst, '}'), nil
		},
		Decode: func(b []byte) (Ad, error) {
			et, id, err := Fields(b)
			if err != nil {
				return Ad{}, codec.NewDecodeError[Ad](name, b, err)
			}
			a, ok := ads[string(id)]
			if !ok {
				return Ad{}, codec.NewDecodeError[Ad](name, b, fmt.Errorf("ysb: unknown ad_id %q", id))
			}
			a.EventType = eventTypeOf(et)
			return a, nil
		},
	}
}

// eventTypeOf returns et as one of YSB's event types without allocating,
// or as a new string.
func eventTypeOf(et []byte) string {
	for _, t := range eventTypes {
		if bytes.Equal(et, []byte(t)) {
			return t
		}
	}
	return string(et)
}

// Decimal is the codec of a count as decimal text, as window.Count writes
// it (so Sink and ResultOf read the typed pipeline's results too).
func Decimal() codec.Codec[int64] {
	const name = "decimal"
	return codec.Codec[int64]{
		Name:   name,
		Encode: func(dst []byte, n int64) ([]byte, error) { return strconv.AppendInt(dst, n, 10), nil },
		Decode: func(b []byte) (int64, error) {
			n, err := strconv.ParseInt(string(b), 10, 64)
			if err != nil {
				return 0, codec.NewDecodeError[int64](name, b, err)
			}
			return n, nil
		},
	}
}
