package ysb_test

import (
	"testing"

	"github.com/sluicehq/sluice/samples/ysb"
)

// same checks that Fields answers as encoding/json does.
func same(t *testing.T, in []byte) {
	et1, ad1, err1 := ysb.Fields(in)
	et2, ad2, err2 := ysb.DecodeJSON(in)
	if (err1 == nil) != (err2 == nil) || string(et1) != string(et2) || string(ad1) != string(ad2) {
		t.Fatalf("%q: Fields = %q, %q, %v; encoding/json = %q, %q, %v", in, et1, ad1, err1, et2, ad2, err2)
	}
}

func TestFieldsAgreesWithEncodingJSON(t *testing.T) {
	gen := ysb.Config{Events: 10}.Generator()
	cases := []string{
		string(gen.Event(3).AppendJSON(nil)),
		`{"event_type":"view","ad_id":"a"}`,
		` { "ad_id" : "a" , "event_type" : "click" } `,
		`{"ad_id":"a","ad_id":"b","event_type":"view"}`,
		`{"AD_ID":"a","event_type":"view"}`,
		`{"ad_id":"a\"b","event_type":"view"}`,
		`{"ad_id":"a\u0062","event_type":"view"}`,
		`{"ad_id":"é","event_type":"view"}`,
		`{"ad_id":null,"event_type":"view"}`,
		`{"ad_id":5,"event_type":"view"}`,
		`{"n":1.5e3,"t":true,"f":false,"z":null,"ad_id":"a","event_type":"view"}`,
		`{"nested":{"ad_id":"x"},"ad_id":"a","event_type":"view"}`,
		`{"n":01,"ad_id":"a"}`,
		`{"ad_id":"a",}`,
		`{"ad_id":"a"} x`,
		`{"event_type":`,
		`{}`,
		`null`,
		`[]`,
		``,
	}
	for _, c := range cases {
		same(t, []byte(c))
	}
}

func FuzzFields(f *testing.F) {
	gen := ysb.Config{Events: 10}.Generator()
	f.Add(gen.Event(1).AppendJSON(nil))
	f.Add([]byte(`{"AD_ID":"a","event_type":"view","x":[1,2]}`))
	f.Fuzz(func(t *testing.T, in []byte) { same(t, in) })
}

func BenchmarkDecode(b *testing.B) {
	gen := ysb.Config{Events: 1000}.Generator()
	var events [][]byte
	for i := range int64(1000) {
		events = append(events, gen.Event(i).AppendJSON(nil))
	}
	for _, bc := range []struct {
		name   string
		decode func([]byte) ([]byte, []byte, error)
	}{{"scanner", ysb.Fields}, {"encoding-json", ysb.DecodeJSON}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, _, err := bc.decode(events[i%len(events)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
