package control_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors/tail"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// tailers counts the subscription readers deployed.
func tailers(rt *node.Runtime) int { return len(tail.Readers(rt.Node().Topology())) }

// TestTailStreamsRecordsAsNDJSON: GET /v1/streams/{name}/tail answers the
// records produced once its header arrived, text or base64, with event
// time and headers, and ends after ?n records; the reader is removed.
func TestTailStreamsRecordsAsNDJSON(t *testing.T) {
	rt, a := startEmbedded(t, 0, []string{"count"})
	var e api.Error
	if code := a.do("GET", "/v1/streams/nope/tail", nil, &e); code != 404 || !strings.Contains(e.Error, `no stream "nope"`) {
		t.Fatalf("unknown stream = %d %q, want 404 naming it", code, e.Error)
	}
	if code := a.do("GET", "/v1/streams/"+testkinds.Words+"/tail?n=0", nil, &e); code != 400 || !strings.Contains(e.Error, "n:") {
		t.Fatalf("n=0 = %d %q, want 400 naming n", code, e.Error)
	}
	resp, err := http.Get(a.base + "/v1/streams/" + testkinds.Words + "/tail?n=3")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("tail = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	recs := []sdk.Record{
		{Key: []byte("k1"), Value: []byte("hello"), EventTime: at, Headers: []sdk.Header{{Key: "h", Value: "v"}}},
		{Key: []byte{0xff, 0}, Value: []byte{0xfe, 1, 2}},
		{Key: []byte("k3"), Value: []byte("third")},
		{Key: []byte("k4"), Value: []byte("past n")},
	}
	for _, rec := range recs {
		if err := rt.Produce(context.Background(), testkinds.Words, rec); err != nil {
			t.Fatal(err)
		}
	}
	var got []api.TailRecord
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var tr api.TailRecord
		if err := json.Unmarshal(sc.Bytes(), &tr); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, tr)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d records, want 3 (n=3): %+v", len(got), got)
	}
	if g := got[0]; g.Key != "k1" || g.Value != "hello" || !g.EventTime.Equal(at) || len(g.Headers) != 1 || g.Headers[0] != (api.TailHeader{Key: "h", Value: "v"}) {
		t.Fatalf("first record %+v", g)
	}
	k, _ := got[1].KeyBytes()
	v, _ := got[1].ValueBytes()
	if got[1].KeyBase64 == "" || string(k) != "\xff\x00" || string(v) != "\xfe\x01\x02" {
		t.Fatalf("binary record %+v", got[1])
	}
	if got[2].Value != "third" {
		t.Fatalf("third record %+v", got[2])
	}
	sluicetest.WaitFor(t, 30*time.Second, "the reader to be removed", func() bool { return tailers(rt) == 0 })
}

// TestTailEndsWhenTheClientGoes: a client that goes away unsubscribes.
func TestTailEndsWhenTheClientGoes(t *testing.T) {
	rt, a := startEmbedded(t, 0, []string{"count"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.base+"/v1/streams/"+testkinds.Words+"/tail", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || tailers(rt) != 1 {
		t.Fatalf("tail = %d with %d readers, want 200 and 1", resp.StatusCode, tailers(rt))
	}
	cancel()
	resp.Body.Close()
	sluicetest.WaitFor(t, 30*time.Second, "the reader to be removed", func() bool { return tailers(rt) == 0 })
}
