package core

import (
	"strings"
	"testing"
)

func TestRuntimeValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		runtime Runtime
		module  string
		want    string // part of the error, "" for valid
	}{
		{"go by default", "", "", ""},
		{"go", RuntimeGo, "", ""},
		{"wasm", RuntimeWasm, "/ops/wc.wasm", ""},
		{"wasm without module", RuntimeWasm, "", "module: a wasm operator needs the path"},
		{"module on go", "", "/ops/wc.wasm", "module: only a wasm operator has a module"},
		{"unknown", "python", "", `runtime: unknown runtime "python"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Metadata{Name: "op", Runtime: tc.runtime, Module: tc.module}.WithDefaults()
			err := m.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	if got := Runtime("").String(); got != "go" {
		t.Errorf("unset runtime is %q, want go", got)
	}
}
