package http

import (
	"encoding/json"
	"testing"
)

// FuzzParseBody: any body either parses into records that are each valid
// JSON within the record limit, or is refused with a 4xx naming the
// problem; it never panics.
func FuzzParseBody(f *testing.F) {
	for _, s := range []string{`[1,2]`, `{"id":"a"}`, "{\"id\":\"a\"}\n\n[3]\n", `[`, `[1,]`, `[{"id":1}] x`, ``, "\n\n"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, lines bool) {
		ct := "application/json"
		if lines {
			ct = "application/x-ndjson"
		}
		recs, berr := parseBody(ct, []byte(body), 64, "id")
		if berr != nil {
			if berr.status < 400 || berr.status > 499 || berr.msg == "" {
				t.Fatalf("refusal %d %q", berr.status, berr.msg)
			}
			return
		}
		if len(recs) == 0 {
			t.Fatal("no records and no refusal")
		}
		for i, r := range recs {
			if !json.Valid(r.Value) || len(r.Value) > 64 || r.Key == nil {
				t.Fatalf("record %d: %q key %q", i, r.Value, r.Key)
			}
		}
	})
}
