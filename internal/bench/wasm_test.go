package bench

import (
	"bytes"
	"strings"
	"testing"
)

// The wasm group runs at a small size and prints its three rows, the
// wasm word count having counted every record (WordCount waits for all of
// them at the sink).
func TestWasmGroupRuns(t *testing.T) {
	var out bytes.Buffer
	if err := Table(&out, TableConfig{Runs: 1, Records: 5_000, Scenarios: []string{"wasm"}}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"keyed word count, Go counter (baseline)", "keyed word count, wasm counter (wazero)", "keyed counter alone in sdktest, Go / wasm", "wasm with Config.NoCallTimeout", "empty operator in sdktest"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no row %q in\n%s", want, out.String())
		}
	}
}
