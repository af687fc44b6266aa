package node_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/generate"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
	"math/rand/v2"
)

type countingSink struct{ n *atomic.Int64 }

func (countingSink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "sink", Inputs: []sdk.Input{{Stream: "nums", Routing: sdk.GroupBy}}, Parallelism: 2}
}
func (countingSink) Init(sdk.Context) error { return nil }
func (s countingSink) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	n, err := sdk.GetInt64(ctx.State(), []byte("seen"))
	if err != nil {
		return err
	}
	sdk.PutInt64(ctx.State(), []byte("seen"), n+1)
	s.n.Add(1)
	return nil
}
func (countingSink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

func TestRunStopsCleanlyOnCancelAndKeepsState(t *testing.T) {
	dir := t.TempDir()
	seen := &atomic.Int64{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- node.Run(ctx, node.Config{NodeConfig: node.NodeConfig{DataDir: dir, Logger: sluicetest.Logger(t)}},
			func() sdk.Operator {
				return &generate.Source{Name: "nums", Stream: "nums", Count: 5000,
					Make: func(i int64, _ *rand.Rand) sdk.Record { return sdk.Record{Key: []byte{byte(i)}} }}
			},
			func() sdk.Operator { return countingSink{seen} },
		)
	}()
	sluicetest.WaitFor(t, 30*time.Second, "5000 records", func() bool { return seen.Load() == 5000 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	// Run committed on the way out: the counters add up to 5000.
	db, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var total int64
	err = db.NewStore("sink").Scan(0, 256, []byte("seen"), func(_ int, _, v []byte) error {
		n, err := sdk.BytesInt64(v)
		total += n
		return err
	})
	if err != nil || total != 5000 {
		t.Fatalf("stored counts add up to %d (err %v), want 5000", total, err)
	}
}

func TestStartWithoutOperators(t *testing.T) {
	if _, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir()}}); err == nil {
		t.Fatal("Start with no operators succeeded, want an error")
	}
}
