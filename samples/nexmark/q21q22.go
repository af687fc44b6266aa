package nexmark

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/stream"
)

// ChannelBid is an answer of q21 (a bid with its channel's id) and of q22
// (a bid with the first three directories of its URL).
type ChannelBid struct {
	Auction, Bidder, Price int64
	Channel                string
	// ChannelID is q21's; Dirs q22's.
	ChannelID string    `json:",omitempty"`
	Dirs      [3]string `json:",omitempty"`
}

func (cb ChannelBid) text() string {
	return fmt.Sprintf("%d %d %d %s %s %q", cb.Auction, cb.Bidder, cb.Price, cb.Channel, cb.ChannelID, cb.Dirs)
}

// channelIDPattern is q21's REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2).
var channelIDPattern = regexp.MustCompile(`(&|^)channel_id=([^&]*)`)

// hotChannelIDs are q21's ids of the hot channels, by lower-case name.
var hotChannelIDs = map[string]string{"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}

// Query 21, "add channel id": the bids whose channel is one of the hot
// four (case-insensitive) or whose URL names a channel_id, with that id:
// 0 to 3 for the hot ones, else what the URL's channel_id= names, by
// regular expression (Flink's q21.sql: a CASE on lower(channel), else
// REGEXP_EXTRACT; WHERE either is not null).
func q21Query() Query {
	return channelQuery("q21", func(e Event, emit func(ChannelBid)) {
		id, ok := hotChannelIDs[strings.ToLower(e.Channel)]
		if !ok {
			m := channelIDPattern.FindStringSubmatch(e.URL)
			if m == nil {
				return
			}
			id = m[2]
		}
		emit(ChannelBid{Auction: e.Auction, Bidder: e.Bidder, Price: e.Price, Channel: e.Channel, ChannelID: id})
	}, func(e Event) (ChannelBid, bool) {
		cb := ChannelBid{Auction: e.Auction, Bidder: e.Bidder, Price: e.Price, Channel: e.Channel}
		for i, name := range hotChannels { // Google, Facebook, Baidu, Apple
			if strings.EqualFold(e.Channel, name) {
				cb.ChannelID = string("1230"[i])
				return cb, true
			}
		}
		_, query, _ := strings.Cut(e.URL, "?")
		for _, param := range strings.Split(query, "&") {
			if v, ok := strings.CutPrefix(param, "channel_id="); ok {
				cb.ChannelID = v
				return cb, true
			}
		}
		return cb, false
	})
}

// Query 22, "get URL directories": every bid with the first three
// directories of its URL (Flink's q22.sql: SPLIT_INDEX(url, '/', 3), 4
// and 5).
func q22Query() Query {
	return channelQuery("q22", func(e Event, emit func(ChannelBid)) {
		cb := ChannelBid{Auction: e.Auction, Bidder: e.Bidder, Price: e.Price, Channel: e.Channel}
		parts := strings.Split(e.URL, "/")
		for i := range cb.Dirs {
			if 3+i < len(parts) {
				cb.Dirs[i] = parts[3+i]
			}
		}
		emit(cb)
	}, func(e Event) (ChannelBid, bool) {
		cb := ChannelBid{Auction: e.Auction, Bidder: e.Bidder, Price: e.Price, Channel: e.Channel}
		rest := strings.TrimPrefix(e.URL, "https://www.nexmark.com/")
		for i := range cb.Dirs {
			cb.Dirs[i], rest, _ = strings.Cut(rest, "/")
		}
		return cb, true
	})
}

// channelQuery is a query of bids, each handed to f, whose exact answer
// is want's of each bid.
func channelQuery(name string, f func(Event, func(ChannelBid)), want func(Event) (ChannelBid, bool)) Query {
	c := codec.JSON[ChannelBid]()
	return Query{Name: name, Output: answersOf(name),
		Build: func(cfg Config) ([]sdk.Factory, error) {
			p, events, par := events(name, cfg)
			stream.Output(stream.FlatMap(stream.Filter(events, "bids", isBid, par), "channels", f, c, par), answersOf(name), par)
			return p.Build()
		},
		Answer: func(rec sdk.Record) (Answer, error) {
			cb, err := c.Decode(rec.Value)
			if err != nil {
				return Answer{}, err
			}
			return Answer{Key: "bid", Text: cb.text()}, nil
		},
		Expected: func(cfg Config) []Answer {
			var out []Answer
			generated(cfg, func(e Event) {
				if e.Kind != Bid {
					return
				}
				if cb, ok := want(e); ok {
					out = append(out, Answer{Key: "bid", Text: cb.text()})
				}
			})
			return out
		},
	}
}
