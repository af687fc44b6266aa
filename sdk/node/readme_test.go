package node_test

import (
	"os"
	"strings"
	"testing"
)

// TestREADMECounterIsTheExample: the README's operator is the Counter of
// example_test.go, character for character (the README said "this exact
// code" of a snippet that had drifted).
func TestREADMECounterIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	const start, end = "// Counter counts records per key", "func (Counter) ProcessTimer(sdk.Context, string, time.Time) error { return nil }\n"
	region := func(name, s string) string {
		_, rest, ok := strings.Cut(s, start)
		body, _, ok2 := strings.Cut(rest, end)
		if !ok || !ok2 {
			t.Fatalf("%s has no Counter from %q to %q", name, start, end)
		}
		return start + body + end
	}
	if r, e := region("README.md", string(readme)), region("example_test.go", string(example)); r != e {
		t.Fatalf("the README's Counter differs from example_test.go's:\nREADME:\n%s\nexample_test.go:\n%s", r, e)
	}
}
