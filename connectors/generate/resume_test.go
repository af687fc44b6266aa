package generate_test

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// newSource returns the factory of a generator of par instances producing
// each record number as its value; Make panics on record failAt while
// *failAt is set (a failing Poll).
func newSource(par int, failAt *int64) sdk.Factory {
	return func() sdk.Operator {
		return &generate.Source{Name: "gen", Stream: "out", Batch: 10, Parallelism: par,
			Make: func(i int64, _ *rand.Rand) sdk.Record {
				if failAt != nil && *failAt == i {
					panic("downstream refused")
				}
				return sdk.Record{Value: []byte(strconv.FormatInt(i, 10))}
			}}
	}
}

func values(recs []sdk.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Value))
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestResumesFromTheRestoredCheckpoint(t *testing.T) {
	if _, ok := newSource(1, nil)().(sdk.Resumable); !ok {
		t.Fatal("a generator is not sdk.Resumable")
	}
	h, err := sdktest.New(newSource(3, nil), sdktest.WithInstance(1))
	must(t, err)
	for range 3 {
		must(t, h.Poll())
	}
	must(t, h.Checkpoint(1))
	for range 2 {
		must(t, h.Poll())
	}
	after := values(h.Take("out"))[30:]
	must(t, h.Crash(1))
	for range 2 {
		must(t, h.Poll())
	}
	if got := values(h.Take("out")); !slices.Equal(got, after) {
		t.Fatalf("after the restore produced %v, want what followed the checkpoint: %v", got, after)
	}
	if after[0] != "91" { // instance 1 of 3: 1, 4, 7, …; the 31st is 91
		t.Fatalf("record 31 of instance 1 is %s, want 91", after[0])
	}
}

func TestAFailedPollKeepsThePosition(t *testing.T) {
	failAt := int64(15) // the second Poll fails after 5 records
	h, err := sdktest.New(newSource(1, &failAt))
	must(t, err)
	must(t, h.Poll())
	if err := h.Poll(); err == nil {
		t.Fatal("Poll succeeded though Make failed")
	}
	if got, _ := h.GetInGroup(h.Instance().FirstGroup, []byte("generate/next")); string(got) != "10" {
		t.Fatalf("position after a failed Poll is %s, want 10 (the runtime discards the attempt)", got)
	}
	failAt = -1
	must(t, h.Poll())
	if got, want := values(h.Take("out")), numbers(0, 20); !slices.Equal(got, want) {
		t.Fatalf("produced %v, want %v: the failed attempt's records discarded, the next Poll going on from 10", got, want)
	}
}

func numbers(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}
