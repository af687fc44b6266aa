package actors_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/placement"
	"github.com/sluicehq/sluice/sdk"
)

// scanner stores every record under "k/<key>" in its key's group; a record
// with value "scan" reports what State.Scan and sdk.ScanAllGroups see.
type scanner struct{ seen chan [2][]string }

func (scanner) Metadata() core.Metadata {
	return core.Metadata{Name: "scanner", Inputs: []core.Input{{Stream: "in", Routing: core.GroupBy}}, KeyGroups: 8}
}
func (scanner) Init(core.Context) error { return nil }
func (s scanner) ProcessRecord(ctx core.Context, rec core.Record) error {
	if string(rec.Value) != "scan" {
		ctx.State().Set(append([]byte("k/"), rec.Key...), nil)
		return nil
	}
	var group, all []string
	collect := func(into *[]string) func(k, _ []byte) error {
		return func(k, _ []byte) error { *into = append(*into, string(k)); return nil }
	}
	if err := ctx.State().Scan([]byte("k/"), collect(&group)); err != nil {
		return err
	}
	if err := sdk.ScanAllGroups(ctx.State(), []byte("k/"), collect(&all)); err != nil {
		return err
	}
	s.seen <- [2][]string{group, all}
	return nil
}
func (scanner) ProcessTimer(core.Context, string, time.Time) error { return nil }

// TestScanSeesTheCurrentKeyGroupOnly: State.Scan returns the keys of the
// record's key group; sdk.ScanAllGroups those of every group.
func TestScanSeesTheCurrentKeyGroupOnly(t *testing.T) {
	seen := make(chan [2][]string, 1)
	n := startNode(t, t.TempDir(), func() core.Operator { return scanner{seen} })
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	for _, k := range keys {
		sluicetest.Must(t, n.Produce(context.Background(), "in", core.Record{Key: []byte(k)}))
	}
	sluicetest.Must(t, n.Produce(context.Background(), "in", core.Record{Key: []byte("a"), Value: []byte("scan")}))
	var got [2][]string
	select {
	case got = <-seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the scan did not run")
	}
	var wantGroup, wantAll []string
	for _, k := range keys {
		wantAll = append(wantAll, "k/"+k)
		if placement.KeyGroup([]byte(k), 8) == placement.KeyGroup([]byte("a"), 8) {
			wantGroup = append(wantGroup, "k/"+k)
		}
	}
	slices.Sort(got[1])
	if !slices.Equal(got[0], wantGroup) || len(wantGroup) == len(wantAll) {
		t.Fatalf("Scan saw %v, want %v (a's key group only)", got[0], wantGroup)
	}
	if !slices.Equal(got[1], wantAll) {
		t.Fatalf("ScanAllGroups saw %v, want %v", got[1], wantAll)
	}
}
