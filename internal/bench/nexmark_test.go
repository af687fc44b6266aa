package bench

import (
	"bytes"
	"strings"
	"testing"
)

// The nexmark group runs at tiny sizes: a row per query with figures
// (every run's answers were checked exact), none saying WRONG OUTPUT. The
// figures themselves are not checked.
func TestTableNexmarkGroupRuns(t *testing.T) {
	var out bytes.Buffer
	if err := Table(&out, TableConfig{Runs: 1, Scenarios: []string{"nexmark"}, NexmarkEvents: 10_000}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, q := range nexmarkQueries {
		for _, want := range []string{"Nexmark " + q + ", exactly-once, per core", "Nexmark " + q + ", no guarantee, per core"} {
			if !strings.Contains(s, want) {
				t.Errorf("no row %q in\n%s", want, s)
			}
		}
	}
	if strings.Contains(s, "WRONG OUTPUT") {
		t.Errorf("a run's output was wrong:\n%s", s)
	}
}

// A query samples/nexmark does not have is refused.
func TestNexmarkQueryUnknown(t *testing.T) {
	if _, err := NexmarkQuery("q99", NexmarkConfig{Events: 10}); err == nil {
		t.Fatal("an unknown query ran")
	}
}
