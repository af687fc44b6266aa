package generate_test

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

func TestEndsAfterCount(t *testing.T) {
	g, err := sdktest.NewGraph([]sdk.Factory{func() sdk.Operator {
		return &generate.Source{Name: "gen", Stream: "out", Count: 25, Parallelism: 2, Batch: 4, End: true,
			Make: func(i int64, _ *rand.Rand) sdk.Record { return sdk.Record{Value: strconv.AppendInt(nil, i, 10)} }}
	}})
	if err != nil {
		t.Fatal(err)
	}
	polls := 0
	for {
		done, err := g.Poll("gen")
		if err != nil {
			t.Fatal(err)
		}
		polls++
		if done {
			break
		}
		if polls > 10 {
			t.Fatal("the source did not end")
		}
	}
	seen := map[string]bool{}
	for _, r := range g.Take("out") {
		seen[string(r.Value)] = true
	}
	if len(seen) != 25 {
		t.Fatalf("%d distinct records, want 25", len(seen))
	}
	if err := g.Instance("gen", 0).Poll(); !errors.Is(err, sdk.ErrEndOfStream) {
		t.Fatalf("poll after the end: got %v, want ErrEndOfStream", err)
	}
}
