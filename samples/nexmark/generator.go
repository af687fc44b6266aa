package nexmark

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/sdk"
)

// The Nexmark generator's published distributions (Beam's
// NexmarkGenerator and Flink's nexmark port, default configuration): out
// of every 50 events 1 is a person, 3 are auctions and 46 are bids; half of
// the bids go to the newest "hot" auction, the others to one of the 100
// auctions in flight (or up to 10 ahead); three quarters of the bidders
// are hot people, the others one of the 1,000 active people; prices are
// 10^U(0,6) × 100 cents. (The bids' hot auction and hot bidder are the
// newest of a batch of 2 auctions and 4 people here, where the published
// generator batches 100 (HOT_AUCTION_RATIO, HOT_BIDDER_RATIO); q5's
// answers are kept as they are.)
//
// Persons and auctions follow the published PersonGenerator and
// AuctionGenerator: a person's name is one of 11 first names and one of 9
// last names, uniformly; three quarters of the auctions (hotSellersRatio
// 4) are by the hot seller, the first person of the latest batch of 100
// (HOT_SELLER_RATIO), the others by one of the 1,000 active people or up
// to 10 ahead (people not registered yet, as in the published generator).
const (
	personProportion  = 1
	auctionProportion = 3
	totalProportion   = 50 // with 46 bids
	hotAuctionRatio   = 2
	hotBiddersRatio   = 4
	hotSellersRatio   = 4
	hotSellerBatch    = 100
	inFlightAuctions  = 100
	auctionIDLead     = 10
	activePeople      = 1000
	personIDLead      = 10
	firstAuctionID    = 1000
	firstPersonID     = 1000
	firstCategoryID   = 10
	numCategories     = 5
)

// firstNames, lastNames, usStates and usCities are the published
// generator's lists.
var (
	firstNames = [...]string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = [...]string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	usStates   = [...]string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities   = [...]string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
)

// Kind is the kind of a Nexmark event.
type Kind byte

// Event kinds, as the first byte of an encoded event.
const (
	Person  Kind = 'p'
	Auction Kind = 'a'
	Bid     Kind = 'b'
)

// String returns "person", "auction" or "bid".
func (k Kind) String() string {
	switch k {
	case Person:
		return "person"
	case Auction:
		return "auction"
	case Bid:
		return "bid"
	}
	return fmt.Sprintf("Kind(%q)", byte(k))
}

// Event is one Nexmark event; only the fields the queries here read are
// kept (a person's id, name, city and state; an auction's id, seller,
// category, initial bid, reserve and expiry; a bid's auction, bidder,
// price, channel and URL; every event's time). The published generator's
// email addresses, credit cards, item names, descriptions and "extra"
// padding are left out.
type Event struct {
	Kind       Kind
	ID         int64  // person or auction id
	Name       string // person
	City       string // person
	State      string // person
	Seller     int64  // auction: a person id
	Category   int64  // auction: 10 to 14
	InitialBid int64  // auction, in cents
	Reserve    int64  // auction, in cents
	Expires    time.Time
	Auction    int64  // bid
	Bidder     int64  // bid
	Price      int64  // bid, in cents
	Channel    string // bid: one of 4 hot channels or "channel-<n>"
	URL        string // bid: the channel's URL
	DateTime   time.Time
}

// Generator makes event number i of a run, the same on every call: a
// function of the seed and i, at Start + i/EventsPerSecond.
type Generator struct {
	Seed            uint64
	Start           time.Time
	EventsPerSecond int64
}

// Event returns event number i.
func (g *Generator) Event(i int64) Event {
	r := rng{s: mix(g.Seed, uint64(i))}
	e := Event{DateTime: g.Start.Add(time.Duration(i * int64(time.Second) / g.EventsPerSecond))}
	switch off := i % totalProportion; {
	case off < personProportion:
		e.Kind, e.ID = Person, lastPerson(i)+firstPersonID
		e.Name = firstNames[r.intn(int64(len(firstNames)))] + " " + lastNames[r.intn(int64(len(lastNames)))]
		e.City = usCities[r.intn(int64(len(usCities)))]
		e.State = usStates[r.intn(int64(len(usStates)))]
	case off < personProportion+auctionProportion:
		e.Kind, e.ID = Auction, lastAuction(i)+firstAuctionID
		if r.intn(hotSellersRatio) > 0 {
			e.Seller = lastPerson(i) / hotSellerBatch * hotSellerBatch
		} else {
			e.Seller = randomPerson(i, &r)
		}
		e.Seller += firstPersonID
		e.Category = firstCategoryID + r.intn(numCategories)
		e.InitialBid = price(&r)
		e.Reserve = e.InitialBid + price(&r)
		e.Expires = e.DateTime.Add(g.auctionLength(i, &r))
	default:
		e.Kind = Bid
		if r.intn(hotAuctionRatio) > 0 {
			e.Auction = (lastAuction(i) / hotAuctionRatio) * hotAuctionRatio
		} else {
			last := lastAuction(i)
			lo := max(last-inFlightAuctions, 0)
			e.Auction = lo + r.intn(last-lo+1+auctionIDLead)
		}
		e.Auction += firstAuctionID
		if r.intn(hotBiddersRatio) > 0 {
			e.Bidder = (lastPerson(i)/hotBiddersRatio)*hotBiddersRatio + 1
		} else {
			e.Bidder = randomPerson(i, &r)
		}
		e.Bidder += firstPersonID
		e.Price = price(&r)
		e.Channel, e.URL = channel(&r)
	}
	return e
}

// The published BidGenerator's channels: half the bids come through one
// of 4 hot channels, each with its URL, the others through one of
// channelsNumber channels "channel-<n>", whose URL names its channel_id
// (the bits of n reversed, as a 32-bit integer's absolute value) 9 times
// in 10.
const (
	hotChannelsRatio = 2
	channelsNumber   = 10_000
)

var (
	hotChannels = [...]string{"Google", "Facebook", "Baidu", "Apple"}
	hotURLs     = [...]string{baseURL(1), baseURL(2), baseURL(3), baseURL(4)}
	// channels are the other channels' names and URLs, made once: the
	// published generator caches them too.
	channels = sync.OnceValue(func() *[channelsNumber]struct{ name, url, withID string } {
		cs := new([channelsNumber]struct{ name, url, withID string })
		for n := range cs {
			cs[n].name = fmt.Sprintf("channel-%d", n)
			cs[n].url = baseURL(uint64(n) + 100)
			id := int64(int32(bits.Reverse32(uint32(n))))
			cs[n].withID = cs[n].url + "&channel_id=" + strconv.FormatInt(max(id, -id), 10)
		}
		return cs
	})
)

// channel draws a bid's channel and URL.
func channel(r *rng) (name, url string) {
	if r.intn(hotChannelsRatio) > 0 {
		i := r.intn(int64(len(hotChannels)))
		return hotChannels[i], hotURLs[i]
	}
	c := &channels()[r.intn(channelsNumber)]
	if r.intn(10) > 0 {
		return c.name, c.withID
	}
	return c.name, c.url
}

// baseURL returns the URL of channel seed: the published generator's
// "https://www.nexmark.com/<a>/<b>/<c>/item.htm?query=1", a, b and c of 3
// to 5 lower-case letters (the published ones 1 to 5 letters or '_').
func baseURL(seed uint64) string {
	r := rng{s: mix(seed, 1<<40)}
	url := "https://www.nexmark.com/"
	for range 3 {
		for range 3 + r.intn(3) {
			url += string(rune('a' + r.intn(26)))
		}
		url += "/"
	}
	return url + "item.htm?query=1"
}

// price draws a price in cents, 10^U(0,6) × 100 (Beam's nextPrice).
func price(r *rng) int64 { return int64(math.Round(math.Pow(10, r.float()*6) * 100)) }

// auctionLength draws how long the auction of event i runs (Beam's
// nextAuctionLengthMs): 1 ms plus up to twice the time the generator takes
// to make the next inFlightAuctions auctions, in whole milliseconds, so
// that about that many are open at once.
func (g *Generator) auctionLength(i int64, r *rng) time.Duration {
	ahead := int64(inFlightAuctions * totalProportion / auctionProportion)
	horizon := (ahead * int64(time.Second) / g.EventsPerSecond) / int64(time.Millisecond)
	return time.Duration(1+r.intn(max(2*horizon, 1))) * time.Millisecond
}

// randomPerson returns the base-0 id of one of the active people at event
// i or up to personIDLead ahead (Beam's nextBase0PersonId).
func randomPerson(i int64, r *rng) int64 {
	people := lastPerson(i) + 1
	active := min(people, activePeople)
	return people - active + r.intn(active+personIDLead)
}

// lastAuction returns the base-0 id of the last auction generated at or
// before event i (Beam's lastBase0AuctionId).
func lastAuction(i int64) int64 {
	epoch, off := i/totalProportion, i%totalProportion
	switch {
	case off < personProportion:
		epoch--
		off = auctionProportion - 1
	case off >= personProportion+auctionProportion:
		off = auctionProportion - 1
	default:
		off -= personProportion
	}
	return epoch*auctionProportion + off
}

// lastPerson returns the base-0 id of the last person generated at or
// before event i (Beam's lastBase0PersonId).
func lastPerson(i int64) int64 {
	epoch, off := i/totalProportion, i%totalProportion
	if off >= personProportion {
		off = personProportion - 1
	}
	return epoch*personProportion + off
}

// rng is SplitMix64, seeded per event.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix(r.s, 0)
}

// intn returns a number in [0, n); n > 0.
func (r *rng) intn(n int64) int64 { return int64(r.next() % uint64(n)) }

// float returns a number in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

func mix(seed, i uint64) uint64 {
	z := seed + (i+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Encode appends e's encoding: its kind, its time (Unix ns, a varint),
// then uvarints (person: id, then the lengths of name, city and state
// followed by their bytes; auction: id, seller, category, initial bid,
// reserve and expiry, Unix ns; bid: auction, bidder, price, then the
// lengths of channel and URL followed by their bytes). The event
// time travels as the record's EventTime too.
func (e Event) Encode(b []byte) []byte {
	b = append(b, byte(e.Kind))
	b = binary.AppendVarint(b, e.DateTime.UnixNano())
	switch e.Kind {
	case Bid:
		b = binary.AppendUvarint(b, uint64(e.Auction))
		b = binary.AppendUvarint(b, uint64(e.Bidder))
		b = binary.AppendUvarint(b, uint64(e.Price))
		b = binary.AppendUvarint(b, uint64(len(e.Channel)))
		b = binary.AppendUvarint(b, uint64(len(e.URL)))
		return append(append(b, e.Channel...), e.URL...)
	case Auction:
		for _, v := range [...]int64{e.ID, e.Seller, e.Category, e.InitialBid, e.Reserve, e.Expires.UnixNano()} {
			b = binary.AppendUvarint(b, uint64(v))
		}
		return b
	}
	b = binary.AppendUvarint(b, uint64(e.ID))
	for _, s := range [...]string{e.Name, e.City, e.State} {
		b = binary.AppendUvarint(b, uint64(len(s)))
	}
	return append(append(append(b, e.Name...), e.City...), e.State...)
}

// errCorrupt is returned for a record that is not an encoded event.
var errCorrupt = errors.New("nexmark: corrupt event")

// Decode decodes an encoded event.
func Decode(b []byte) (Event, error) {
	if len(b) == 0 {
		return Event{}, fmt.Errorf("%w: empty", errCorrupt)
	}
	e := Event{Kind: Kind(b[0])}
	var v [6]uint64
	n := 0
	switch e.Kind {
	case Person:
		n = 4
	case Auction:
		n = 6
	case Bid:
		n = 5
	default:
		return Event{}, fmt.Errorf("%w: unknown kind %q", errCorrupt, b[0])
	}
	t, w := binary.Varint(b[1:])
	if w <= 0 {
		return Event{}, fmt.Errorf("%w: truncated %v", errCorrupt, e.Kind)
	}
	e.DateTime = time.Unix(0, t).UTC()
	b = b[1+w:]
	for j := range n {
		x, w := binary.Uvarint(b)
		if w <= 0 {
			return Event{}, fmt.Errorf("%w: truncated %v", errCorrupt, e.Kind)
		}
		v[j], b = x, b[w:]
	}
	switch e.Kind {
	case Person:
		if uint64(len(b)) != v[1]+v[2]+v[3] {
			return Event{}, fmt.Errorf("%w: person of %d bytes of strings, want %d", errCorrupt, len(b), v[1]+v[2]+v[3])
		}
		e.ID, e.Name, e.City, e.State = int64(v[0]), string(b[:v[1]]), string(b[v[1]:v[1]+v[2]]), string(b[v[1]+v[2]:])
		return e, nil
	case Auction:
		e.ID, e.Seller, e.Category, e.InitialBid, e.Reserve = int64(v[0]), int64(v[1]), int64(v[2]), int64(v[3]), int64(v[4])
		e.Expires = time.Unix(0, int64(v[5])).UTC()
	default:
		if uint64(len(b)) != v[3]+v[4] {
			return Event{}, fmt.Errorf("%w: bid of %d bytes of strings, want %d", errCorrupt, len(b), v[3]+v[4])
		}
		e.Auction, e.Bidder, e.Price = int64(v[0]), int64(v[1]), int64(v[2])
		e.Channel, e.URL = string(b[:v[3]]), string(b[v[3]:])
		return e, nil
	}
	if len(b) > 0 {
		return Event{}, fmt.Errorf("%w: %d bytes after the %v", errCorrupt, len(b), e.Kind)
	}
	return e, nil
}

// DecodeBid decodes an encoded event; ok is false if it is not a bid.
func DecodeBid(b []byte) (auction, bidder, price int64, ok bool, err error) {
	if len(b) == 0 {
		return 0, 0, 0, false, errCorrupt
	}
	if Kind(b[0]) != Bid {
		return 0, 0, 0, false, nil
	}
	_, w := binary.Varint(b[1:])
	if w <= 0 {
		return 0, 0, 0, false, errCorrupt
	}
	var v [3]uint64
	b = b[1+w:]
	for j := range v {
		n, w := binary.Uvarint(b)
		if w <= 0 {
			return 0, 0, 0, false, errCorrupt
		}
		v[j], b = n, b[w:]
	}
	return int64(v[0]), int64(v[1]), int64(v[2]), true, nil
}

// Source returns the generator source: events 0..count−1 to the events
// stream with their event time; instance j of parallelism p produces the
// events ≡ j (mod p), batch per Poll (0: 1024), at most rate a second
// (0: unthrottled), then ends
// (sdk.ErrEndOfStream). Its watermark follows its event times
// (monotonic). It is a generate.Source, so it resumes from its
// position in State.
func (g *Generator) Source(count int64, parallelism, batch int, rate float64) sdk.Factory {
	return func() sdk.Operator {
		return &generate.Source{Name: SourceName, Stream: EventsStream, Count: count, Parallelism: parallelism, Batch: batch, Rate: rate, End: true,
			Watermarks: &sdk.WatermarkStrategy{}, // event times never go back per instance
			Make: func(i int64, _ *rand.Rand) sdk.Record {
				e := g.Event(i)
				return sdk.Record{Value: e.Encode(nil), EventTime: e.DateTime}
			}}
	}
}
