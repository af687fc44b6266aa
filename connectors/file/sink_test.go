package file_test

import (
	"testing"

	"github.com/sluicehq/sluice/connectors/file"
)

// TestSinkNotInitialised covers the operator of a failed instance, which
// the runtime never initialises but still flushes and closes.
func TestSinkNotInitialised(t *testing.T) {
	var s file.Sink
	if err := s.Flush(nil); err != nil {
		t.Fatalf("Flush: got %v, want nil", err)
	}
	for i := range 2 {
		if err := s.Close(nil); err != nil {
			t.Fatalf("Close %d: got %v, want nil", i+1, err)
		}
	}
	if err := s.Flush(nil); err != nil {
		t.Fatalf("Flush after Close: got %v, want nil", err)
	}
}
