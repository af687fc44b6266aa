package control_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/telemetry"
)

// findOp returns the named operator of a snapshot.
func findOp(snap api.ConsoleSnapshot, name string) (api.ConsoleOperator, bool) {
	for _, o := range snap.Operators {
		if o.Name == name {
			return o, true
		}
	}
	return api.ConsoleOperator{}, false
}

// waitSnapshot GETs /v1/console until ok holds for the snapshot, and
// returns that snapshot.
func waitSnapshot(a client, what string, ok func(api.ConsoleSnapshot) bool) api.ConsoleSnapshot {
	a.t.Helper()
	var snap api.ConsoleSnapshot
	sluicetest.WaitEvery(a.t, 30*time.Second, 100*time.Millisecond, what, func() bool {
		snap = api.ConsoleSnapshot{}
		if code := a.do("GET", "/v1/console", nil, &snap); code != 200 {
			a.t.Fatalf("GET /v1/console = %d", code)
		}
		return ok(snap)
	})
	return snap
}

// readEvent reads the next server-sent event: its name and data.
func readEvent(t *testing.T, sc *bufio.Scanner) (string, string) {
	t.Helper()
	var event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" && data != "":
			return event, data
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data += strings.TrimPrefix(line, "data: ")
		}
	}
	t.Fatalf("event stream ended: %v", sc.Err())
	return "", ""
}

// TestConsoleSnapshotStreamAndDeploy: GET /v1/console measures every
// operator's and stream's rates, GET /v1/console/events streams snapshots,
// POST /v1/console/deploy deploys manifest text and names the line and
// field of a bad one, and /ui/ serves the pages.
func TestConsoleSnapshotStreamAndDeploy(t *testing.T) {
	every, err := telemetry.ParseSampling("1") // time every record: latencies at once
	if err != nil {
		t.Fatal(err)
	}
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0",
		Deploy: []string{"gen", "count"}, Guarantee: sdk.AtLeastOnce, Telemetry: &node.TelemetryConfig{Prometheus: true, Sampling: every}},
		testkinds.Gen(1e9, 1000, 2000, 1), testkinds.CounterFactory(2, false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	a := client{t: t, base: "http://" + rt.HTTPAddr()}

	snap := waitSnapshot(a, "records/s measured on gen, words and count", func(snap api.ConsoleSnapshot) bool {
		gen, _ := findOp(snap, "gen")
		count, _ := findOp(snap, "count")
		for _, s := range snap.Streams {
			if s.Name == "words" && s.Rate > 0 {
				return gen.OutRate > 0 && count.InRate > 0 && snap.Interval > 0 &&
					len(count.Detail) > 0 && count.Detail[0].Latency != nil && count.Detail[0].Latency.Timed > 0
			}
		}
		return false
	})
	count, _ := findOp(snap, "count")
	if l := count.Detail[0].Latency; l.ProcessP50 <= 0 || l.ProcessP99 < l.ProcessP50 {
		t.Fatalf("count's latency %+v: want 0 < p50 ≤ p99", *l)
	}
	if len(count.Detail) != 2 || count.Detail[0].Node != rt.Node().ID() || count.Instances != 2 {
		t.Fatalf("count in the snapshot: %+v, want 2 placed instances", count)
	}
	if len(snap.Nodes) != 1 || !snap.Nodes[0].Healthy || snap.Nodes[0].Process == nil || snap.Nodes[0].Process.Goroutines == 0 || snap.Nodes[0].Process.HeapBytes == 0 {
		t.Fatalf("nodes in the snapshot: %+v", snap.Nodes)
	}
	if count.Blocked < 0 || count.Blocked > 1 {
		t.Fatalf("count's backpressure share %v is not in [0, 1]", count.Blocked)
	}

	// The event stream: two snapshots, a second apart.
	resp, err := http.Get(a.base + "/v1/console/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("GET /v1/console/events = %d %s", resp.StatusCode, ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	var times []time.Time
	for range 2 {
		event, data := readEvent(t, sc)
		var s api.ConsoleSnapshot
		if err := json.Unmarshal([]byte(data), &s); err != nil || event != "snapshot" {
			t.Fatalf("event %q %s: %v", event, data, err)
		}
		if _, ok := findOp(s, "gen"); !ok {
			t.Fatalf("snapshot without gen: %s", data)
		}
		times = append(times, s.Time)
	}
	if !times[1].After(times[0]) {
		t.Fatalf("snapshot times %v do not advance", times)
	}

	// Deploy from manifest text.
	var e api.Error
	if code := a.do("POST", "/v1/console/deploy", api.ConsoleDeployRequest{Text: "name: gen2\nkind: gen\ninstances: -1\n"}, &e); code != 400 ||
		len(e.Fields) != 1 || !strings.Contains(e.Fields[0], "instances: must be ≥ 1") {
		t.Fatalf("deploy of a bad manifest = %d %+v, want 400 naming instances", code, e)
	}
	e = api.Error{}
	if code := a.do("POST", "/v1/console/deploy", api.ConsoleDeployRequest{Text: "name: gen2\nkind: gen\ninstnaces: 2\n"}, &e); code != 400 ||
		len(e.Fields) != 1 || !strings.HasPrefix(e.Fields[0], "line 3: ") || !strings.Contains(e.Fields[0], "instnaces") {
		t.Fatalf("deploy of an unknown field = %d %+v, want 400 naming line 3", code, e)
	}
	var dr api.DeploymentResponse
	if code := a.do("POST", "/v1/console/deploy", api.ConsoleDeployRequest{Text: "name: gen2\nkind: gen\n---\nname: count2\nkind: count\ninputs: [{stream: words, routing: group-by}]\n"}, &dr); code != 201 ||
		len(dr.Operators) != 2 || dr.Operators[0].Name != "gen2" || dr.Operators[1].Name != "count2" {
		t.Fatalf("deploy of two manifests = %d %+v", code, dr)
	}

	// The pages.
	var page string
	if code := a.do("GET", "/ui/", nil, &page); code != 200 || !strings.Contains(page, "<title>Sluice console</title>") {
		t.Fatalf("GET /ui/ = %d %.200s", code, page)
	}
	for _, f := range []string{"/ui/app.js", "/ui/graph.js", "/ui/style.css"} {
		if code := a.do("GET", f, nil, &page); code != 200 || len(page) < 100 {
			t.Fatalf("GET %s = %d (%d bytes)", f, code, len(page))
		}
	}
}

// TestConsoleAuthentication: the pages need no token, their data does;
// a read token reads but cannot deploy; a server shutting down ends the
// event streams instead of waiting for them.
func TestConsoleAuthentication(t *testing.T) {
	tokens := credstest.TokenFile(t, "admin:"+adminToken, "read:"+readToken)
	rt := startSecure(t, control.Security{TokensFile: tokens})
	base := "http://" + rt.HTTPAddr()
	anon := caller{t: t, base: base}
	reader := caller{t: t, base: base, token: readToken}
	admin := caller{t: t, base: base, token: adminToken}
	var page string
	if code := anon.do("GET", "/ui/", nil, &page); code != 200 || !strings.Contains(page, "Sluice console") {
		t.Fatalf("GET /ui/ without a token = %d, want the page", code)
	}
	for _, path := range []string{"/v1/console", "/v1/console/events"} {
		if code := anon.do("GET", path, nil, nil); code != 401 {
			t.Fatalf("GET %s without a token = %d, want 401", path, code)
		}
	}
	var snap api.ConsoleSnapshot
	if code := reader.do("GET", "/v1/console", nil, &snap); code != 200 || len(snap.Operators) != 1 {
		t.Fatalf("GET /v1/console with a read token = %d %+v", code, snap)
	}
	body := api.ConsoleDeployRequest{Text: "name: gen\n"}
	if code := anon.do("POST", "/v1/console/deploy", body, nil); code != 401 {
		t.Fatalf("console deploy without a token = %d, want 401", code)
	}
	var e api.Error
	if code := reader.do("POST", "/v1/console/deploy", body, &e); code != 403 || e.Need != api.RoleAdmin {
		t.Fatalf("console deploy with a read token = %d %+v, want 403", code, e)
	}
	if code := admin.do("POST", "/v1/console/deploy", body, nil); code != 201 {
		t.Fatalf("console deploy with an admin token = %d, want 201", code)
	}

	req, _ := http.NewRequest("GET", base+"/v1/console/events", nil)
	req.Header.Set("Authorization", "Bearer "+readToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	if event, _ := readEvent(t, sc); event != "snapshot" || resp.StatusCode != 200 {
		t.Fatalf("event stream with a read token: %d, first event %q", resp.StatusCode, event)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := rt.Stop(ctx); err != nil {
		t.Fatalf("stop with an event stream open: %v", err)
	}
	for sc.Scan() {
	}
}

// TestConsoleEventsOutliveTimeouts: an event stream is not cut by the
// server's read and write timeouts (meant for slow clients), and ends when
// the server shuts down.
func TestConsoleEventsOutliveTimeouts(t *testing.T) {
	srv := serveWith(t, control.Config{Limits: control.Limits{ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond}})
	resp, err := http.Get(srv.URL() + "/v1/console/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	// Three snapshots a second apart: the stream lives for 2 s, several
	// times both timeouts.
	for range 3 {
		if event, data := readEvent(t, sc); event != "snapshot" {
			t.Fatalf("event %q: %s", event, data)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with an event stream open: %v", err)
	}
	for sc.Scan() {
	}
}
