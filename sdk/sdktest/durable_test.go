package sdktest_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// replay produces 0, 1, 2, … one per Poll; Rewind goes back to the last
// durable position.
type replay struct{ next, durable *int64 }

func (replay) Metadata() sdk.Metadata                      { return sdk.Metadata{Name: "replay", Outputs: []string{"out"}} }
func (replay) Init(sdk.Context) error                      { return nil }
func (replay) ProcessRecord(sdk.Context, sdk.Record) error { return nil }
func (replay) ProcessTimer(sdk.Context, string, time.Time) error {
	return nil
}
func (r replay) Poll(ctx sdk.Context) error {
	*r.next++
	return ctx.Produce("out", sdk.Record{Value: []byte(strconv.FormatInt(*r.next-1, 10))})
}
func (r replay) Position() any                  { return *r.next }
func (r replay) Durable(_ sdk.Context, pos any) { *r.durable = pos.(int64) }
func (r replay) Rewind(ctx sdk.Context) error   { *r.next = *r.durable; return nil }

func TestHarnessReplayable(t *testing.T) {
	var next, durable int64
	h, err := sdktest.New(func() sdk.Operator { return replay{&next, &durable} }, sdktest.WithGuarantee(sdk.AtLeastOnce))
	must(t, err)
	must(t, h.Poll())
	must(t, h.Poll())
	pos, err := h.Position()
	must(t, err)
	must(t, h.Poll())
	if durable != 0 {
		t.Fatalf("durable %d before Durable", durable)
	}
	must(t, h.Durable(pos))
	if durable != 2 {
		t.Fatalf("durable %d, want 2", durable)
	}
	must(t, h.Rewind())
	must(t, h.Poll())
	if got := values(h.Take("out")); len(got) != 4 || got[3] != "=2" {
		t.Fatalf("after the rewind produced %v, want 0 1 2 then 2 again", got)
	}
	must(t, h.MarkDurable())
	if durable != 3 {
		t.Fatalf("MarkDurable: durable %d, want 3", durable)
	}
	other, err := sdktest.New(func() sdk.Operator { return scanner{} })
	must(t, err)
	if err := other.Rewind(); err == nil {
		t.Fatal("Rewind of an operator that is not replayable accepted")
	}
}
