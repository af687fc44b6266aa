package ysb

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/sdk"
)

// The static table's size: 100 campaigns of 10 ads each, as in YSB.
const (
	Campaigns      = 100
	AdsPerCampaign = 10
)

// Table is the static ad → campaign table.
type Table struct {
	Ads        []string          // every ad id; ad j belongs to campaign j / AdsPerCampaign
	CampaignOf map[string]string // ad id → campaign id
	Campaigns  []string
}

// NewTable returns the table for seed: ids are UUID-shaped strings drawn
// from seed, so the table is the same on every node.
func NewTable(seed uint64) *Table {
	t := &Table{CampaignOf: make(map[string]string, Campaigns*AdsPerCampaign)}
	for c := range Campaigns {
		camp := uuid(mix(seed, 1<<40+uint64(c)), mix(seed, 1<<41+uint64(c)))
		t.Campaigns = append(t.Campaigns, camp)
		for a := range AdsPerCampaign {
			n := uint64(c*AdsPerCampaign + a)
			ad := uuid(mix(seed, 1<<42+n), mix(seed, 1<<43+n))
			t.Ads = append(t.Ads, ad)
			t.CampaignOf[ad] = camp
		}
	}
	return t
}

// Event is one ad event.
type Event struct {
	UserID, PageID, AdID, AdType, EventType string
	EventTime                               int64 // Unix milliseconds
	IPAddress                               string
}

// ipAddress is every event's ip_address (YSB's generator uses one too).
const ipAddress = "1.2.3.4"

var (
	adTypes    = [...]string{"banner", "modal", "sponsored-search", "mail", "mobile"}
	eventTypes = [...]string{"view", "click", "purchase"}
)

// Generator makes event number i of a run, the same on every call and
// every node: fields are drawn from a hash of (seed, i), and event i
// happens at Start + i/EventsPerSecond (whole milliseconds).
type Generator struct {
	Seed            uint64
	Start           time.Time
	EventsPerSecond int64
	Table           *Table
}

// Event returns event number i.
func (g *Generator) Event(i int64) Event {
	h := mix(g.Seed, uint64(i))
	return Event{
		UserID:    uuid(h, mix(g.Seed^0x75736572, uint64(i))),
		PageID:    uuid(mix(g.Seed^0x70616765, uint64(i)), h>>7),
		AdID:      g.Table.Ads[h%uint64(len(g.Table.Ads))],
		AdType:    adTypes[(h>>20)%uint64(len(adTypes))],
		EventType: eventTypes[(h>>32)%uint64(len(eventTypes))],
		EventTime: g.Start.UnixMilli() + i*1000/g.EventsPerSecond,
		IPAddress: ipAddress,
	}
}

// AppendJSON appends e as YSB's JSON object (event_time is a string of
// Unix milliseconds, as in YSB's generator).
func (e Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"user_id":"`...)
	b = append(b, e.UserID...)
	b = append(b, `","page_id":"`...)
	b = append(b, e.PageID...)
	b = append(b, `","ad_id":"`...)
	b = append(b, e.AdID...)
	b = append(b, `","ad_type":"`...)
	b = append(b, e.AdType...)
	b = append(b, `","event_type":"`...)
	b = append(b, e.EventType...)
	b = append(b, `","event_time":"`...)
	b = strconv.AppendInt(b, e.EventTime, 10)
	b = append(b, `","ip_address":"`...)
	b = append(b, e.IPAddress...)
	return append(b, `"}`...)
}

// mix hashes (seed, i) with SplitMix64's finaliser.
func mix(seed, i uint64) uint64 {
	z := seed + (i+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// uuid formats 128 bits as a UUID-shaped string.
func uuid(hi, lo uint64) string {
	var b [36]byte
	return string(appendUUID(b[:0], hi, lo))
}

// hexPairs holds the two lower-case hex digits of every byte value.
const hexPairs = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" +
	"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f" +
	"404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f" +
	"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f" +
	"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f" +
	"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf" +
	"c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf" +
	"e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"

// appendUUID appends 128 bits (hi first, most significant nibble first)
// as a UUID-shaped string: 8-4-4-4-12 hex digits.
func appendUUID(b []byte, hi, lo uint64) []byte {
	var u [36]byte
	j := 0
	for n, w := range [2]uint64{hi, lo} {
		for k := 56; k >= 0; k -= 8 {
			// Byte positions 4, 6, 8 and 10 of the 16 start a group.
			if pos := n*8 + (56-k)/8; pos == 4 || pos == 6 || pos == 8 || pos == 10 {
				u[j] = '-'
				j++
			}
			x := byte(w >> uint(k))
			u[j], u[j+1] = hexPairs[2*int(x)], hexPairs[2*int(x)+1]
			j += 2
		}
	}
	return append(b, u[:]...)
}

// AppendEventJSON appends event i as JSON: Event(i).AppendJSON, without
// building the Event's strings (the generator source's path).
func (g *Generator) AppendEventJSON(b []byte, i int64) (out []byte, eventTime int64) {
	h := mix(g.Seed, uint64(i))
	eventTime = g.Start.UnixMilli() + i*1000/g.EventsPerSecond
	b = append(b, `{"user_id":"`...)
	b = appendUUID(b, h, mix(g.Seed^0x75736572, uint64(i)))
	b = append(b, `","page_id":"`...)
	b = appendUUID(b, mix(g.Seed^0x70616765, uint64(i)), h>>7)
	b = append(b, `","ad_id":"`...)
	b = append(b, g.Table.Ads[h%uint64(len(g.Table.Ads))]...)
	b = append(b, `","ad_type":"`...)
	b = append(b, adTypes[(h>>20)%uint64(len(adTypes))]...)
	b = append(b, `","event_type":"`...)
	b = append(b, eventTypes[(h>>32)%uint64(len(eventTypes))]...)
	b = append(b, `","event_time":"`...)
	b = strconv.AppendInt(b, eventTime, 10)
	b = append(b, `","ip_address":"`+ipAddress+`"}`...)
	return b, eventTime
}

// Source returns the generator source: events 0..count−1 as JSON records
// to the events stream, with their event time; instance j of parallelism
// p produces the events ≡ j (mod p), in order, batch per Poll (0: 1024)
// and at most rate per second (0: unlimited),
// then ends (sdk.ErrEndOfStream). Its watermark follows its event times
// (monotonic). It is a generate.Source, so it resumes
// from its position in State.
func (g *Generator) Source(count int64, parallelism, batch int, rate float64) sdk.Factory {
	return func() sdk.Operator {
		return &generate.Source{Name: SourceName, Stream: EventsStream, Count: count, Parallelism: parallelism, Batch: batch, Rate: rate, End: true,
			Watermarks: &sdk.WatermarkStrategy{}, // event times never go back per instance
			Make: func(i int64, _ *rand.Rand) sdk.Record {
				v, t := g.AppendEventJSON(make([]byte, 0, 256), i)
				return sdk.Record{Value: v, EventTime: time.UnixMilli(t)}
			}}
	}
}
