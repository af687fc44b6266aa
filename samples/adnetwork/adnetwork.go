// Package adnetwork is the ad-network example from the Concord talk, on
// Sluice: generators of impressions and clicks feed per-publisher counts
// (group-by publisher), which feed a click-through-rate operator; a
// "trending URLs" operator ranks the URLs seen in impressions; a dashboard
// sink keeps the latest figures for display.
//
//	impressions ─┬─▶ publisher-counts ──▶ ctr ──────────┐
//	clicks ──────┘        (group-by)       (group-by)    ├─▶ dashboard
//	impressions ───────▶ trending-urls ─────────────────┘
//
// Records: impressions and clicks have the publisher as key and the URL as
// value; publisher-counts carries "impressions clicks" per publisher; ctr
// carries "ctr impressions clicks"; trending carries "url=count,…".
package adnetwork

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/sdk"
)

// Stream names.
const (
	Impressions     = "impressions"
	Clicks          = "clicks"
	PublisherCounts = "publisher-counts"
	CTR             = "ctr"
	Trending        = "trending"
)

// Publishers and URLs in the generated traffic.
const (
	numPublishers = 20
	numURLs       = 500
)

// Config sets the traffic of the generators.
type Config struct {
	// ImpressionRate is impressions per second; 0 means 20000.
	ImpressionRate float64
	// ClickRate is clicks per second; 0 means 2% of ImpressionRate.
	ClickRate float64
	// Count stops each generator after this many records; 0 means never.
	Count int64
}

func (c Config) withDefaults() Config {
	if c.ImpressionRate == 0 {
		c.ImpressionRate = 20000
	}
	if c.ClickRate == 0 {
		c.ClickRate = c.ImpressionRate / 50
	}
	return c
}

// Publisher returns the name of publisher i.
func Publisher(i int) string { return fmt.Sprintf("pub-%02d", i) }

// pickPublisher draws a publisher: low numbers get more traffic.
func pickPublisher(rng *rand.Rand) string {
	return Publisher(min(int(rng.ExpFloat64()*5), numPublishers-1))
}

// pickURL draws a URL: a few URLs are far more popular than the rest.
func pickURL(rng *rand.Rand) string {
	return "/article/" + strconv.Itoa(min(int(rng.ExpFloat64()*40), numURLs-1))
}

// ImpressionSource generates impressions.
func ImpressionSource(c Config) sdk.Factory {
	c = c.withDefaults()
	return func() sdk.Operator {
		return &generate.Source{Name: "impressions", Stream: Impressions, Rate: c.ImpressionRate, Count: c.Count,
			Make: func(_ int64, rng *rand.Rand) sdk.Record {
				return sdk.Record{Key: []byte(pickPublisher(rng)), Value: []byte(pickURL(rng))}
			}}
	}
}

// ClickSource generates clicks; publishers with higher numbers get clicked
// relatively more, so their CTR is higher.
func ClickSource(c Config) sdk.Factory {
	c = c.withDefaults()
	return func() sdk.Operator {
		return &generate.Source{Name: "clicks", Stream: Clicks, Rate: c.ClickRate, Count: c.Count,
			Make: func(_ int64, rng *rand.Rand) sdk.Record {
				p := pickPublisher(rng)
				if rng.IntN(3) == 0 {
					p = Publisher(rng.IntN(numPublishers))
				}
				return sdk.Record{Key: []byte(p), Value: []byte(pickURL(rng))}
			}}
	}
}

// PublisherCountsOp counts impressions and clicks per publisher and emits
// the running totals on every change.
type PublisherCountsOp struct{}

// Metadata implements sdk.Operator.
func (PublisherCountsOp) Metadata() sdk.Metadata {
	return sdk.Metadata{
		Name: "publisher-counts",
		Inputs: []sdk.Input{
			{Stream: Impressions, Routing: sdk.GroupBy},
			{Stream: Clicks, Routing: sdk.GroupBy},
		},
		Outputs:     []string{PublisherCounts},
		Parallelism: 4,
	}
}

// Init implements sdk.Operator.
func (PublisherCountsOp) Init(sdk.Context) error { return nil }

// ProcessRecord adds the record to its publisher's totals.
func (PublisherCountsOp) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	st := ctx.State()
	impKey, clkKey := append([]byte("imp/"), rec.Key...), append([]byte("clk/"), rec.Key...)
	imps, err := sdk.GetInt64(st, impKey)
	if err != nil {
		return err
	}
	clicks, err := sdk.GetInt64(st, clkKey)
	if err != nil {
		return err
	}
	if rec.Stream == Clicks {
		clicks++
		sdk.PutInt64(st, clkKey, clicks)
	} else {
		imps++
		sdk.PutInt64(st, impKey, imps)
	}
	return ctx.Produce(PublisherCounts, sdk.Record{Key: rec.Key, Value: fmt.Appendf(nil, "%d %d", imps, clicks)})
}

// ProcessTimer implements sdk.Operator.
func (PublisherCountsOp) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// CTROp keeps the latest totals per publisher and reports every publisher's
// click-through rate once a second.
type CTROp struct{}

// Metadata implements sdk.Operator.
func (CTROp) Metadata() sdk.Metadata {
	return sdk.Metadata{
		Name:        "ctr",
		Inputs:      []sdk.Input{{Stream: PublisherCounts, Routing: sdk.GroupBy}},
		Outputs:     []string{CTR},
		Parallelism: 2,
	}
}

const reportTimer = "report"

// Init schedules the first report.
func (CTROp) Init(ctx sdk.Context) error {
	return ctx.SetTimer(reportTimer, time.Now().Add(time.Second))
}

// reportArmed marks a key group whose report timer is set.
var reportArmed = []byte("report-armed")

// ProcessRecord stores the publisher's latest totals and makes sure its key
// group reports: State.Scan sees one key group, so each key group with
// publishers has a report timer of its own.
func (CTROp) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	ctx.State().Set(append([]byte("totals/"), rec.Key...), rec.Value)
	if _, err := ctx.State().Get(reportArmed); errors.Is(err, sdk.ErrNotFound) {
		ctx.State().Set(reportArmed, nil)
		return ctx.SetTimer(reportTimer, time.Now().Add(time.Second))
	} else if err != nil {
		return err
	}
	return nil
}

// ProcessTimer emits the CTR of every publisher of the timer's key group.
func (CTROp) ProcessTimer(ctx sdk.Context, key string, _ time.Time) error {
	if key != reportTimer {
		return nil
	}
	err := ctx.State().Scan([]byte("totals/"), func(k, v []byte) error {
		var imps, clicks int64
		if _, err := fmt.Sscan(string(v), &imps, &clicks); err != nil {
			return fmt.Errorf("ctr: bad totals %q for %s: %w", v, k, err)
		}
		ctr := 0.0
		if imps > 0 {
			ctr = float64(clicks) / float64(imps)
		}
		pub := k[len("totals/"):]
		return ctx.Produce(CTR, sdk.Record{Key: append([]byte(nil), pub...), Value: fmt.Appendf(nil, "%g %d %d", ctr, imps, clicks)})
	})
	if err != nil {
		return err
	}
	return ctx.SetTimer(reportTimer, time.Now().Add(time.Second))
}

// TrendingOp ranks URLs by impressions over the last one or two 10-second
// windows and reports the top five once a second.
type TrendingOp struct{}

// Window is the length of a trending window.
const Window = 10 * time.Second

// Metadata implements sdk.Operator.
func (TrendingOp) Metadata() sdk.Metadata {
	return sdk.Metadata{
		Name:    "trending-urls",
		Inputs:  []sdk.Input{{Stream: Impressions, Routing: sdk.Shuffle}},
		Outputs: []string{Trending},
	}
}

// Init schedules the first report.
func (TrendingOp) Init(ctx sdk.Context) error {
	return ctx.SetTimer(reportTimer, time.Now().Add(time.Second))
}

func windowPrefix(t time.Time) []byte {
	return fmt.Appendf(nil, "w/%d/", t.Truncate(Window).Unix())
}

// ProcessRecord counts the impression's URL in the current window.
func (TrendingOp) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	key := append(windowPrefix(time.Now()), rec.Value...)
	n, err := sdk.GetInt64(ctx.State(), key)
	if err != nil {
		return err
	}
	sdk.PutInt64(ctx.State(), key, n+1)
	return nil
}

// ProcessTimer reports the top URLs of the current and the previous window
// (the last 10 to 20 seconds) and drops older windows.
func (TrendingOp) ProcessTimer(ctx sdk.Context, key string, _ time.Time) error {
	if key != reportTimer {
		return nil
	}
	now := time.Now()
	cur, prev := string(windowPrefix(now)), string(windowPrefix(now.Add(-Window)))
	counts := map[string]int64{}
	var stale [][]byte
	err := ctx.State().Scan([]byte("w/"), func(k, v []byte) error {
		w, url, ok := cutWindow(k)
		if !ok || (w != cur && w != prev) {
			stale = append(stale, append([]byte(nil), k...))
			return nil
		}
		n, err := sdk.BytesInt64(v)
		counts[url] += n
		return err
	})
	if err != nil {
		return err
	}
	for _, k := range stale {
		ctx.State().Delete(k)
	}
	var top topK
	for url, n := range counts {
		top.offer(url, n)
	}
	if len(top) > 0 {
		if err := ctx.Produce(Trending, sdk.Record{Key: []byte("top"), Value: []byte(top.String())}); err != nil {
			return err
		}
	}
	return ctx.SetTimer(reportTimer, now.Add(time.Second))
}

// cutWindow splits a state key "w/<window>/<url>" into "w/<window>/" and url.
func cutWindow(k []byte) (window, url string, ok bool) {
	if len(k) < 2 {
		return "", "", false
	}
	i := bytes.IndexByte(k[2:], '/')
	if i < 0 {
		return "", "", false
	}
	return string(k[:i+3]), string(k[i+3:]), true
}

// topK keeps the five largest counts.
type topK []urlCount

type urlCount struct {
	url string
	n   int64
}

func (t *topK) offer(url string, n int64) {
	i := len(*t)
	for i > 0 && (*t)[i-1].n < n {
		i--
	}
	if i >= 5 {
		return
	}
	*t = append((*t)[:i], append([]urlCount{{url, n}}, (*t)[i:]...)...)
	if len(*t) > 5 {
		*t = (*t)[:5]
	}
}

func (t topK) String() string {
	var b []byte
	for i, u := range t {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%s=%d", u.url, u.n)
	}
	return string(b)
}
