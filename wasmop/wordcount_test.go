package wasmop_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
	"github.com/sluicehq/sluice/wasmop"
)

// wordCountMeta is the sample's metadata: lines in, counts out.
func wordCountMeta() sdk.Metadata {
	return sdk.Metadata{Name: "wc", Inputs: []sdk.Input{{Stream: "lines"}}, Outputs: []string{"counts"}}
}

// lines returns n lines of words from a small vocabulary and the count of
// each word.
func lines(n int) ([]sdk.Record, map[string]int64) {
	r := rand.New(rand.NewPCG(1, 2))
	want := map[string]int64{}
	recs := make([]sdk.Record, n)
	for i := range recs {
		var b strings.Builder
		for range 1 + r.IntN(6) {
			w := fmt.Sprintf("w%d", r.IntN(40))
			want[w]++
			b.WriteString(w + " ")
		}
		recs[i] = sdk.Record{Value: []byte(b.String())}
	}
	return recs, want
}

// lastCounts returns the last count produced for each word.
func lastCounts(t *testing.T, recs []sdk.Record) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	for _, r := range recs {
		n, err := strconv.ParseInt(string(r.Value), 10, 64)
		if err != nil {
			t.Fatalf("count %q of %q: %v", r.Value, r.Key, err)
		}
		got[string(r.Key)] = n
	}
	return got
}

// TestWordCountThroughCrashAndRestore runs the wasm sample in the test
// kit through checkpoints, a crash (operator dropped, state back to the
// checkpoint, input after it replayed) and a restore: the counts are
// exact, in state and in the last count produced per word.
func TestWordCountThroughCrashAndRestore(t *testing.T) {
	h := newHost(t, wasmop.Config{})
	m := load(t, h, wordCount)
	hs, err := sdktest.New(m.Factory(wordCountMeta()), sdktest.WithGuarantee(sdk.ExactlyOnce))
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	recs, want := lines(3000)
	send := func(from, to int) {
		t.Helper()
		if err := hs.Send("lines", recs[from:to]...); err != nil {
			t.Fatal(err)
		}
	}
	send(0, 1000)
	if err := hs.Checkpoint(1); err != nil {
		t.Fatal(err)
	}
	if err := hs.Complete(1); err != nil {
		t.Fatal(err)
	}
	send(1000, 1800)
	if err := hs.Crash(1); err != nil { // the 800 lines after checkpoint 1 are lost
		t.Fatal(err)
	}
	hs.Take("counts")
	send(1000, 2500) // replayed from checkpoint 1's position, and more
	if err := hs.Checkpoint(2); err != nil {
		t.Fatal(err)
	}
	if err := hs.Complete(2); err != nil {
		t.Fatal(err)
	}
	send(2500, 2700)
	if err := hs.Restore(2); err != nil { // rolled back: the 200 lines go again
		t.Fatal(err)
	}
	send(2500, 3000)
	got := lastCounts(t, hs.Take("counts"))
	for w, n := range want {
		if got[w] != n {
			t.Errorf("last count of %s: got %d, want %d", w, got[w], n)
		}
		v, ok := hs.GetInGroup(hs.Instance().FirstGroup, []byte(w))
		if c, err := sdk.BytesInt64(v); !ok || err != nil || c != n {
			t.Errorf("state of %s: got %d (%v, %v), want %d", w, c, ok, err, n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got counts of %d words, want %d: %v", len(got), len(want), slices.Sorted(maps.Keys(got)))
	}
}
