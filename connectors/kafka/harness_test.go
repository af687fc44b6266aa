package kafka_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// start runs f's operator in a harness, instance 0 under at-least-once
// with a quiet logger unless opts say otherwise, as the runtime would
// (Init included); it is closed when the test ends.
func start(t *testing.T, f sdk.Factory, opts ...sdktest.Option) *sdktest.Harness {
	t.Helper()
	h, err := sdktest.New(f, append([]sdktest.Option{sdktest.WithGuarantee(sdk.AtLeastOnce), sdktest.WithLogger(quiet)}, opts...)...)
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// pollUntil polls h's source until stream has n records.
func pollUntil(t *testing.T, h *sdktest.Harness, stream string, n int) {
	t.Helper()
	sluicetest.WaitEvery(t, 20*time.Second, 20*time.Millisecond, strconv.Itoa(n)+" records produced", func() bool {
		if err := h.Poll(); err != nil && !errors.Is(err, sdk.ErrTransient) {
			t.Fatal(err)
		}
		return len(h.Output(stream)) >= n
	})
	if got := len(h.Output(stream)); got != n {
		t.Fatalf("produced %d records, want %d", got, n)
	}
}

// stateKeys returns h's state keys with prefix, in order.
func stateKeys(h *sdktest.Harness, prefix string) []string {
	var out []string
	for _, e := range h.State() {
		if k := string(e.Key); strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}
