package nexmark

import (
	"reflect"
	"testing"
	"time"
)

// An open auction survives its codec with and without a best bid; every
// cut of its encoding short of the events fails to decode.
func TestOpenAuctionCodec(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	a := Event{Kind: Auction, ID: 1001, Seller: 1000, Category: 10, InitialBid: 100, Reserve: 300, DateTime: at, Expires: at.Add(time.Second)}
	o := openAuction{start: at.UnixNano(), expires: a.Expires.UnixNano(), auction: a.Encode(nil)}
	c := openCodec()
	for _, tc := range []struct {
		name string
		o    openAuction
	}{
		{"no best bid", o},
		{"a best bid", o.withBest(Event{Kind: Bid, Auction: 1001, Bidder: 1002, Price: 500, DateTime: at.Add(time.Millisecond)})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := c.Encode(nil, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Decode(b)
			if err != nil || !reflect.DeepEqual(got.auction, tc.o.auction) || string(got.bid) != string(tc.o.bid) ||
				got.start != tc.o.start || got.expires != tc.o.expires || got.hasBest != tc.o.hasBest || got.bestPrice != tc.o.bestPrice || got.bestTime != tc.o.bestTime {
				t.Fatalf("decoded %+v, %v; want %+v", got, err, tc.o)
			}
			header := len(b) - len(tc.o.auction) - len(tc.o.bid)
			for n := range header {
				if _, err := c.Decode(b[:n]); err == nil {
					t.Errorf("%d of %d bytes decoded", n, len(b))
				}
			}
		})
	}
}
