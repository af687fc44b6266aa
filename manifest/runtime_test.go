package manifest

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/core"
)

func TestValidateRuntime(t *testing.T) {
	wasm := func(edit func(*api.Manifest)) api.Manifest {
		m := api.Manifest{Name: "wc", Runtime: "wasm", Module: "/ops/wc.wasm", Outputs: []string{"counts"}}
		edit(&m)
		return m
	}
	for _, tc := range []struct {
		name string
		m    api.Manifest
		want string // "field: part of the problem", "" for valid
	}{
		{"go default", api.Manifest{Name: "wc"}, ""},
		{"go", api.Manifest{Name: "wc", Runtime: "go"}, ""},
		{"wasm", wasm(func(*api.Manifest) {}), ""},
		{"wasm with its kind", wasm(func(m *api.Manifest) { m.Kind = core.WasmKind }), ""},
		{"unknown runtime", api.Manifest{Name: "wc", Runtime: "jvm"}, `runtime: unknown runtime "jvm"`},
		{"wasm without module", wasm(func(m *api.Manifest) { m.Module = "" }), "module: a wasm operator needs"},
		{"relative module", wasm(func(m *api.Manifest) { m.Module = "wc.wasm" }), "module: \"wc.wasm\": give an absolute, clean path"},
		{"unclean module", wasm(func(m *api.Manifest) { m.Module = "/ops/../wc.wasm" }), "module: \"/ops/../wc.wasm\": give an absolute"},
		{"not .wasm", wasm(func(m *api.Manifest) { m.Module = "/ops/wc" }), "module: \"/ops/wc\": a WebAssembly module's file name ends in .wasm"},
		{"module on go", api.Manifest{Name: "wc", Module: "/ops/wc.wasm"}, "module: only a wasm operator has a module"},
		{"wasm with executable", wasm(func(m *api.Manifest) { m.Executable = "/opt/node" }), "executable: a wasm operator runs in the node"},
		{"wasm with another kind", wasm(func(m *api.Manifest) { m.Kind = "counter" }), "kind: a wasm operator's kind is sluice.wasm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.m)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	m := Metadata(wasm(func(*api.Manifest) {}), core.Metadata{})
	if m.Runtime != core.RuntimeWasm || m.Module != "/ops/wc.wasm" {
		t.Fatalf("Metadata: runtime %q module %q, want wasm /ops/wc.wasm", m.Runtime, m.Module)
	}
	y, err := Parse([]byte("name: wc\nruntime: wasm\nmodule: /ops/wc.wasm\noutputs: [counts]\n"))
	if err != nil || len(y) != 1 || y[0].Runtime != "wasm" || y[0].Module != "/ops/wc.wasm" {
		t.Fatalf("Parse: %+v, %v; want runtime and module read from YAML", y, err)
	}
}
