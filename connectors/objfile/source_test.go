package objfile_test

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/connectors/objfile"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/objstore"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// values returns the values of h's output records on stream "out".
func values(h *sdktest.Harness) []string {
	var out []string
	for _, r := range h.Take("out") {
		out = append(out, string(r.Value))
	}
	return out
}

// pollToEnd polls h until it finishes (at most polls times).
func pollToEnd(t *testing.T, h *sdktest.Harness, polls int) {
	t.Helper()
	for range polls {
		err := h.Poll()
		if errors.Is(err, sdk.ErrEndOfStream) || (err == nil && h.Finished()) {
			return
		}
		sluicetest.Must(t, err)
	}
	t.Fatalf("source not finished after %d polls", polls)
}

// The bounded source reads back what the sink committed, skipping pending
// objects, and resumes after a restore from the object after its position.
func TestSourceReadsTheCommittedFilesOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, st objstore.Store) {
		sink := newSink(t, objfile.SinkConfig{Store: st, Prefix: "out/", RollRecords: 4})
		send(t, sink, 0, 10, nil)
		sluicetest.Must(t, sink.Checkpoint(1))
		sluicetest.Must(t, sink.Complete(1))
		send(t, sink, 10, 14, nil) // a rolled file, pending: not read
		sluicetest.Must(t, sink.Checkpoint(2))

		f, err := objfile.NewSource(objfile.SourceConfig{Name: "read", Stream: "out", Store: st, Prefix: "out/"})
		sluicetest.Must(t, err)
		h, err := sdktest.New(f)
		sluicetest.Must(t, err)
		t.Cleanup(func() { _ = h.Close() })

		sluicetest.Must(t, h.Poll()) // the first file: 0-3
		sluicetest.Must(t, h.Checkpoint(1))
		sluicetest.Must(t, h.Poll()) // 4-7, rolled back below
		sluicetest.Must(t, h.Crash(1))
		pollToEnd(t, h, 10)
		var want []string
		for i := range 10 {
			want = append(want, strconv.Itoa(i))
		}
		want = append(want[:8], want[4:]...) // 4-7 read twice: once before the crash
		if got := values(h); !slices.Equal(got, want) {
			t.Errorf("read %v, want %v", got, want)
		}
	})
}
