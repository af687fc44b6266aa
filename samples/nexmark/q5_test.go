package nexmark_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/samples/nexmark"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

func TestGeneratorDistributions(t *testing.T) {
	gen := nexmark.Config{}.Generator()
	kinds := map[nexmark.Kind]int{}
	hot := 0
	for i := range int64(50000) {
		e := gen.Event(i)
		kinds[e.Kind]++
		if e.Kind == nexmark.Bid && e.Auction%2 == 0 && e.Price < 100 {
			t.Fatalf("bid %d: price %d below 100 cents", i, e.Price)
		}
		if e.Kind == nexmark.Bid && e.DateTime.Sub(gen.Start) != time.Duration(i)*100*time.Microsecond {
			t.Fatalf("event %d at %v", i, e.DateTime.Sub(gen.Start))
		}
		if e.Kind == nexmark.Bid && i%50 >= 4 {
			newest := 1000 + (i/50)*3 + 2
			if e.Auction == newest/2*2 {
				hot++
			}
		}
	}
	if kinds[nexmark.Person] != 1000 || kinds[nexmark.Auction] != 3000 || kinds[nexmark.Bid] != 46000 {
		t.Fatalf("kinds: %v, want 1:3:46", kinds)
	}
	if hot < 46000/2 || hot > 46000*6/10 {
		t.Fatalf("%d of 46000 bids on the hot auction, want about half", hot)
	}
}

// TestQ5Exact runs query 5 in sdktest with parallelism 1 and 4, the
// watermark following the sources, and compares every window's answer
// with Q5Expected.
func TestQ5Exact(t *testing.T) {
	for _, p := range []int{1, 4} {
		t.Run(fmt.Sprintf("parallelism-%d", p), func(t *testing.T) {
			cfg := nexmark.Config{Events: 15000, EventsPerSecond: 200, Seed: 3, Parallelism: p, Batch: 200}
			fs, err := nexmark.Q5(cfg)
			if err != nil {
				t.Fatal(err)
			}
			g, err := sdktest.NewGraph(fs)
			if err != nil {
				t.Fatal(err)
			}
			got := map[int64]nexmark.Hot{}
			take := func() {
				for _, r := range g.Take(nexmark.Q5HotItems) {
					end, h, err := nexmark.Q5Result(r)
					if err != nil {
						t.Fatal(err)
					}
					if _, dup := got[end.UnixNano()]; dup {
						t.Fatalf("window ending %v answered twice", end)
					}
					got[end.UnixNano()] = h
				}
			}
			if err := g.RunSources(1000); err != nil {
				t.Fatal(err)
			}
			take()
			want := nexmark.Q5Expected(cfg)
			if len(got) != len(want) {
				t.Errorf("%d windows answered, want %d", len(got), len(want))
			}
			for end, w := range want {
				if got[end].String() != w.String() {
					t.Errorf("window ending %v: got %q, want %q", time.Unix(0, end).UTC(), got[end], w)
				}
			}
		})
	}
}

func TestBidsRejectsCorruptEvents(t *testing.T) {
	fs, err := nexmark.Q5(nexmark.Config{Events: 1})
	if err != nil {
		t.Fatal(err)
	}
	h, err := sdktest.New(fs[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Send(nexmark.EventsStream, sdk.Record{Value: []byte{'b', 0x80}}); err == nil {
		t.Fatal("a truncated bid was accepted")
	}
	if err := h.Send(nexmark.EventsStream, sdk.Record{Value: nexmark.Event{Kind: nexmark.Person, ID: 7}.Encode(nil)}); err != nil || len(h.Output(nexmark.Q5BidsStream)) != 0 {
		t.Fatalf("a person: %v, %d bids", err, len(h.Output(nexmark.Q5BidsStream)))
	}
}
