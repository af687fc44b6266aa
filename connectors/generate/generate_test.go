package generate_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

func source(count int64, rate float64, par int) sdk.Factory {
	return func() sdk.Operator {
		return &generate.Source{Name: "gen", Stream: "out", Count: count, Rate: rate, Parallelism: par,
			Make: func(i int64, _ *rand.Rand) sdk.Record { return sdk.Record{Value: []byte(strconv.FormatInt(i, 10))} }}
	}
}

func collect(got *sluicetest.Collector) sdk.Factory {
	return func() sdk.Operator {
		return &sluicetest.Sink{Name: "sink", Inputs: []core.Input{{Stream: "out"}}, Into: got}
	}
}

func TestEveryNumberOnceAcrossInstancesAndRestarts(t *testing.T) {
	dir := t.TempDir()
	got := &sluicetest.Collector{}
	start := func(count int64) *node.Runtime {
		rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: dir, Logger: sluicetest.Logger(t)}}, source(count, 0, 3), collect(got))
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	rt := start(3000)
	sluicetest.WaitFor(t, 30*time.Second, "3000 records", func() bool { return got.Len() == 3000 })
	sluicetest.Must(t, rt.Stop(context.Background()))
	rt = start(7000) // resumes from the stored positions
	sluicetest.WaitFor(t, 30*time.Second, "7000 records", func() bool { return got.Len() == 7000 })
	sluicetest.Must(t, rt.Stop(context.Background()))
	seen := make(map[string]int)
	for _, d := range got.All() {
		seen[string(d.Record.Value)]++
	}
	for i := 0; i < 7000; i++ {
		if seen[strconv.Itoa(i)] != 1 {
			t.Fatalf("record %d produced %d times, want once", i, seen[strconv.Itoa(i)])
		}
	}
}

func TestRateLimit(t *testing.T) {
	got := &sluicetest.Collector{}
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), Logger: sluicetest.Logger(t)}}, source(0, 2000, 1), collect(got))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(context.Background())
	start := time.Now()
	sluicetest.WaitFor(t, 30*time.Second, "1000 records", func() bool { return got.Len() >= 1000 })
	// 1000 records at 2000/s cannot arrive in much less than half a second.
	if el := time.Since(start); el < 400*time.Millisecond {
		t.Fatalf("1000 records in %v at a 2000/s limit", el)
	}
}
