package adnetwork

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// Dashboard holds the latest CTR per publisher and the latest trending
// URLs, as delivered to the dashboard operator. It is safe for concurrent
// use.
type Dashboard struct {
	mu       sync.Mutex
	ctr      map[string]PublisherCTR
	trending string
}

// PublisherCTR is one publisher's latest figures.
type PublisherCTR struct {
	Publisher   string
	CTR         float64
	Impressions int64
	Clicks      int64
}

// NewDashboard returns an empty Dashboard.
func NewDashboard() *Dashboard { return &Dashboard{ctr: make(map[string]PublisherCTR)} }

// Top returns the n publishers with the most impressions.
func (d *Dashboard) Top(n int) []PublisherCTR {
	d.mu.Lock()
	defer d.mu.Unlock()
	all := make([]PublisherCTR, 0, len(d.ctr))
	for _, p := range d.ctr {
		all = append(all, p)
	}
	slices.SortFunc(all, func(a, b PublisherCTR) int {
		if a.Impressions != b.Impressions {
			return int(b.Impressions - a.Impressions)
		}
		return strings.Compare(a.Publisher, b.Publisher)
	})
	return all[:min(n, len(all))]
}

// Trending returns the latest "url=count,…" list.
func (d *Dashboard) Trending() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.trending
}

// Operator returns the factory of the dashboard sink feeding d.
func (d *Dashboard) Operator() sdk.Factory {
	return func() sdk.Operator { return dashboardOp{d} }
}

type dashboardOp struct{ d *Dashboard }

func (dashboardOp) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "dashboard", Inputs: []sdk.Input{{Stream: CTR}, {Stream: Trending}}}
}

func (dashboardOp) Init(sdk.Context) error { return nil }

func (o dashboardOp) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	o.d.mu.Lock()
	defer o.d.mu.Unlock()
	switch rec.Stream {
	case CTR:
		p := PublisherCTR{Publisher: string(rec.Key)}
		if _, err := fmt.Sscan(string(rec.Value), &p.CTR, &p.Impressions, &p.Clicks); err != nil {
			return fmt.Errorf("dashboard: bad ctr record %q: %w", rec.Value, err)
		}
		o.d.ctr[p.Publisher] = p
	case Trending:
		o.d.trending = string(rec.Value)
	}
	return nil
}

func (dashboardOp) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// Operators returns the whole pipeline feeding d.
func Operators(c Config, d *Dashboard) []sdk.Factory {
	return []sdk.Factory{
		ImpressionSource(c),
		ClickSource(c),
		func() sdk.Operator { return PublisherCountsOp{} },
		func() sdk.Operator { return CTROp{} },
		func() sdk.Operator { return TrendingOp{} },
		d.Operator(),
	}
}
