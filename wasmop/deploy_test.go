package wasmop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/wasmtest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// idle is the Go operator the node starts with (node.Start needs one): it
// reads the wasm operator's counts and does nothing.
type idle struct{}

func (idle) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "idle", Inputs: []sdk.Input{{Stream: "counts"}}}
}
func (idle) Init(sdk.Context) error                            { return nil }
func (idle) ProcessRecord(sdk.Context, sdk.Record) error       { return nil }
func (idle) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// deploy posts m to the node's control API and returns the status code
// and the error's field lines.
func deploy(t *testing.T, addr string, m api.Manifest) (int, []string) {
	t.Helper()
	body, err := json.Marshal(api.DeployRequest{Manifest: m})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+addr+"/v1/operators", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e api.Error
	if resp.StatusCode >= 300 {
		_ = json.NewDecoder(resp.Body).Decode(&e)
	}
	return resp.StatusCode, e.Fields
}

// TestDeployWasmManifest deploys the wasm word count through a node's
// control API from a manifest with runtime: wasm: a module that is
// missing, not wasm or not an operator is refused naming the field; the
// sample is deployed under the built-in kind, runs its guest and counts
// exactly.
func TestDeployWasmManifest(t *testing.T) {
	cfg := node.Config{HTTP: "127.0.0.1:0", ControlSecurity: &node.ControlSecurity{}, LaunchPolicy: &node.LaunchPolicy{},
		NodeConfig: node.NodeConfig{DataDir: t.TempDir(), Logger: sluicetest.Logger(t), NoSync: true}}
	ctx := context.Background()
	rt, err := node.Start(ctx, cfg, func() sdk.Operator { return idle{} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Stop(sctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	dir := t.TempDir()
	text := filepath.Join(dir, "text.wasm")
	empty := filepath.Join(dir, "empty.wasm")
	if err := os.WriteFile(text, []byte("not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}, 0o644); err != nil {
		t.Fatal(err)
	}
	mf := func(module string) api.Manifest {
		return api.Manifest{Name: "wc", Runtime: "wasm", Module: module, Inputs: []api.ManifestInput{{Stream: "lines"}}, Outputs: []string{"counts"}}
	}
	for module, says := range map[string]string{
		filepath.Join(dir, "nope.wasm"): "module: " + filepath.Join(dir, "nope.wasm") + ": cannot read the file",
		text:                            "module: " + text + ": not a WebAssembly module",
		empty:                           "module: " + empty + ": missing exports",
		"wc.wasm":                       `module: "wc.wasm": give an absolute, clean path`,
	} {
		code, fields := deploy(t, rt.HTTPAddr(), mf(module))
		if code != http.StatusBadRequest || !strings.HasPrefix(strings.Join(fields, "\n"), says) {
			t.Errorf("deploy of %s: %d %q, want 400 with %q", module, code, fields, says)
		}
	}
	module := wasmtest.MustBuild(t, wordCount)
	if code, fields := deploy(t, rt.HTTPAddr(), mf(module)); code >= 300 {
		t.Fatalf("deploy: %d %v", code, fields)
	}
	sluicetest.WaitFor(t, 30*time.Second, "wc deployed", func() bool { _, ok := rt.Node().Topology().Find("wc"); return ok })
	spec, _ := rt.Node().Topology().Find("wc")
	if spec.Kind != core.WasmKind || spec.Meta.Runtime != core.RuntimeWasm || spec.Meta.Module != module {
		t.Fatalf("deployed spec %+v, want kind %s, runtime wasm, module %s", spec, core.WasmKind, module)
	}
	resp, err := http.Get("http://" + rt.HTTPAddr() + "/v1/operators/wc")
	if err != nil {
		t.Fatal(err)
	}
	var view api.OperatorView
	err = json.NewDecoder(resp.Body).Decode(&view)
	resp.Body.Close()
	if err != nil || view.Runtime != "wasm" || view.Module != module || view.Kind != core.WasmKind {
		t.Fatalf("GET /v1/operators/wc: %+v, %v; want kind %s, runtime wasm and the module", view, err, core.WasmKind)
	}
	sluicetest.WaitFor(t, 30*time.Second, "wc running", func() bool {
		for _, st := range rt.Status() {
			if st.Name == "wc" && len(st.Instances) > 0 && st.Instances[0].State == "running" {
				return true
			}
		}
		return false
	})
	sub, err := rt.Subscribe(ctx, "counts")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	recs, want := lines(200)
	words := 0
	for _, r := range recs {
		words += len(strings.Fields(string(r.Value)))
		if err := rt.Produce(ctx, "lines", r); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got := map[string]int64{}
	for range words {
		rec, err := sub.Next(wctx)
		if err != nil {
			t.Fatalf("after %d counts: %v", len(got), err)
		}
		n, err := strconv.ParseInt(string(rec.Value), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		got[string(rec.Key)] = max(got[string(rec.Key)], n)
	}
	for w, n := range want {
		if got[w] != n {
			t.Errorf("count of %s: got %d, want %d", w, got[w], n)
		}
	}
}
