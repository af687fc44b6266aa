package control_test

import (
	"context"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/manifest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/sdk/window"
)

// A window operator built in Go with 10 s tumbling windows, deployed from
// a manifest whose window mapping says 1 s: its results are 1 s windows
// with exact counts. Changing the deployed windows, windows on a kind
// that has none and bad window fields are refused naming the field.
func TestWindowSettingsFromAManifest(t *testing.T) {
	base := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	ticks := func() sdk.Operator {
		// 300 records, 10 ms apart in event time over keys k0 and k1: 3 s.
		return &generate.Source{Name: "ticks", Stream: "ticks", Count: 300, End: true, Batch: 32, Watermarks: &sdk.WatermarkStrategy{},
			Make: func(i int64, _ *rand.Rand) sdk.Record {
				return sdk.Record{Key: []byte("k" + strconv.FormatInt(i%2, 10)), EventTime: base.Add(time.Duration(i) * 10 * time.Millisecond)}
			}}
	}
	counts, err := window.New(window.Config{Name: "counts", Input: "ticks", Output: "counts-out", Windows: window.Tumbling(10 * time.Second)}, window.Count())
	if err != nil {
		t.Fatal(err)
	}
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)},
		HTTP: "127.0.0.1:0", Deploy: []string{}, Guarantee: sdk.AtLeastOnce}, ticks, counts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	a := client{t: t, base: "http://" + rt.HTTPAddr()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sub, err := rt.Subscribe(ctx, "counts-out")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	ms, err := manifest.Parse([]byte("name: ticks\n---\nname: counts\nwindow:\n  type: tumbling\n  size: 1s\n"))
	if err != nil {
		t.Fatal(err)
	}
	var dr api.DeploymentResponse
	if code := a.do("POST", "/v1/deployments", api.DeploymentRequest{Manifests: ms}, &dr); code != 201 {
		t.Fatalf("deploy = %d %+v", code, dr)
	}
	if w := dr.Operators[1].Window; !w.Equal(&sdk.WindowSpec{Type: core.WindowTumbling, Size: time.Second}) {
		t.Fatalf("deployed window %v, want tumbling(1s)", w)
	}
	got := map[string]string{}
	for len(got) < 6 {
		rec, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		start, end, ok := window.Bounds(rec)
		if !ok {
			t.Fatalf("result %+v has no window bounds", rec)
		}
		if end.Sub(start) != time.Second {
			t.Fatalf("window [%v, %v) of %s: want 1s windows (the manifest's), not the code's 10s", start, end, rec.Key)
		}
		k := string(rec.Key) + "@" + start.Sub(base).String()
		if v, dup := got[k]; dup {
			t.Fatalf("window %s produced twice: %s and %s", k, v, rec.Value)
		}
		got[k] = string(rec.Value)
	}
	want := map[string]string{"k0@0s": "50", "k1@0s": "50", "k0@1s": "50", "k1@1s": "50", "k0@2s": "50", "k1@2s": "50"}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}

	refused := func(m string, wantErr, wantField string) {
		t.Helper()
		ms, err := manifest.Parse([]byte(m))
		if err != nil {
			t.Fatal(err)
		}
		var e api.Error
		if code := a.do("POST", "/v1/operators", api.DeployRequest{Manifest: ms[0]}, &e); code != 400 ||
			!strings.Contains(e.Error, wantErr) || !strings.Contains(strings.Join(e.Fields, "\n"), wantField) {
			t.Errorf("deploying\n%s= %d %+v, want 400 %q with %q", m, code, e, wantErr, wantField)
		}
	}
	// The same windows again change nothing; other windows are refused.
	var same api.DeployResponse
	if code := a.do("POST", "/v1/operators", api.DeployRequest{Manifest: ms[1]}, &same); code != 200 {
		t.Errorf("redeploying the same windows = %d %+v, want 200", code, same)
	}
	refused("name: counts\nwindow:\n  size: 2s\n", `invalid settings for "counts"`,
		"window: is fixed when the operator is first deployed (its window state is laid out by it): tumbling(1s), got tumbling(2s)")
	refused("name: ticks2\nkind: ticks\nwindow:\n  type: global\n", `invalid manifest for "ticks2"`, `window: kind "ticks" is not a window operator`)
	refused("name: counts2\nkind: counts\nwindow:\n  type: tumbling\n  size: 0s\n", `invalid manifest for "counts2"`, "window.size: must be > 0, got 0s")
	refused("name: counts2\nkind: counts\nwindow:\n  type: session\n  gap: 0s\n  lateness: -1s\n", `invalid manifest for "counts2"`,
		"window.gap: must be > 0, got 0s\nwindow.lateness: must be ≥ 0, got -1s")
	// Without a type the fields change the kind's windows, checked as one.
	refused("name: counts2\nkind: counts\nwindow:\n  gap: 5s\n", `invalid manifest for "counts2"`,
		"window.gap: tumbling windows have no gap: remove it (gap is for type session)")
	refused("name: counts2\nkind: counts\nwindow:\n  type: count\n  emit: sometimes\n", `invalid manifest for "counts2"`,
		`window.emit: unknown emit mode "sometimes": want on-close or on-update`)
}
