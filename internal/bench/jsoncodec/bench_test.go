package jsoncodec

import (
	stdjson "encoding/json"
	"syscall"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	goccy "github.com/goccy/go-json"
	segjson "github.com/segmentio/encoding/json"
)

// Event is a YSB ad event with the JSON names of samples/ysb's generator
// (which writes event_time as a string of milliseconds; a number here).
type Event struct {
	UserID    string `json:"user_id"`
	PageID    string `json:"page_id"`
	AdID      string `json:"ad_id"`
	AdType    string `json:"ad_type"`
	EventType string `json:"event_type"`
	EventTime int64  `json:"event_time"`
	IP        string `json:"ip_address"`
}

var ev = Event{
	UserID:    "3f1c9a2e-6b7d-4e21-9c3a-7d5e8f0a1b2c",
	PageID:    "a9b8c7d6-e5f4-4a3b-8c2d-1e0f9a8b7c6d",
	AdID:      "0d1e2f3a-4b5c-4d6e-8f7a-9b0c1d2e3f4a",
	AdType:    "banner",
	EventType: "view",
	EventTime: 1730000000123,
	IP:        "1.2.3.4",
}

type lib struct {
	name string
	enc  func(dst []byte, v *Event) ([]byte, error)
	dec  func(b []byte, v *Event) error
}

// libs are the libraries compared, each called as sdk/codec would call it:
// encode appends to a reused buffer where the library can (only
// segmentio's Append does; the others allocate the result, which is then
// copied), decode parses into a *Event.
var libs = []lib{
	{"encoding-json", func(dst []byte, v *Event) ([]byte, error) {
		b, err := stdjson.Marshal(v)
		return append(dst, b...), err
	}, func(b []byte, v *Event) error { return stdjson.Unmarshal(b, v) }},
	{"goccy-go-json", func(dst []byte, v *Event) ([]byte, error) {
		b, err := goccy.Marshal(v)
		return append(dst, b...), err
	}, func(b []byte, v *Event) error { return goccy.Unmarshal(b, v) }},
	{"segmentio-encoding", func(dst []byte, v *Event) ([]byte, error) {
		return segjson.Append(dst, v, segjson.SortMapKeys)
	}, func(b []byte, v *Event) error { return segjson.Unmarshal(b, v) }},
	{"go-json-experiment", func(dst []byte, v *Event) ([]byte, error) {
		b, err := jsonv2.Marshal(v)
		return append(dst, b...), err
	}, func(b []byte, v *Event) error { return jsonv2.Unmarshal(b, v) }},
}

// TestSame checks that every library writes encoding/json's text and reads
// it back.
func TestSame(t *testing.T) {
	want, _ := stdjson.Marshal(&ev)
	for _, l := range libs {
		b, err := l.enc(nil, &ev)
		if err != nil || string(b) != string(want) {
			t.Errorf("%s: %s %v", l.name, b, err)
		}
		var got Event
		if err := l.dec(want, &got); err != nil || got != ev {
			t.Errorf("%s decode: %+v %v", l.name, got, err)
		}
	}
}

// BenchmarkEncode encodes one event per op.
func BenchmarkEncode(b *testing.B) {
	for _, l := range libs {
		b.Run(l.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 512)
			defer cpu(b)()
			for b.Loop() {
				var err error
				buf, err = l.enc(buf[:0], &ev)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecode decodes one event per op.
func BenchmarkDecode(b *testing.B) {
	data, _ := stdjson.Marshal(&ev)
	for _, l := range libs {
		b.Run(l.name, func(b *testing.B) {
			b.ReportAllocs()
			defer cpu(b)()
			for b.Loop() {
				var e Event
				if err := l.dec(data, &e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// cpu reports the process's CPU time (user + system, every thread, so GC
// work too) per op as cpu-ns/op: on a loaded machine it leaves out the
// time the benchmark waited for a core, which ns/op counts.
func cpu(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
