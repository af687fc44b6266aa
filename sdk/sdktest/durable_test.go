package sdktest_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
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

// flaky produces one record, then fails transiently in the same Poll.
type flaky struct{ replay }

func (f flaky) Poll(ctx sdk.Context) error {
	if err := f.replay.Poll(ctx); err != nil {
		return err
	}
	ctx.State().Set([]byte("polled"), nil)
	return fmt.Errorf("broker away: %w", sdk.ErrTransient)
}

// A transient Poll error is no failure: its records and writes stay, no
// restart.
func TestHarnessTransientPollKeepsItsEffects(t *testing.T) {
	var next, durable int64
	h, err := sdktest.New(func() sdk.Operator { return flaky{replay{&next, &durable}} })
	must(t, err)
	if err := h.Poll(); !errors.Is(err, sdk.ErrTransient) {
		t.Fatalf("Poll: got %v, want the transient error", err)
	}
	if got := values(h.Take("out")); len(got) != 1 || h.Restarts() != 0 {
		t.Fatalf("after a transient Poll: records %v, restarts %d; want the record kept and no restart", got, h.Restarts())
	}
	if _, ok := h.GetInGroup(h.Instance().FirstGroup, []byte("polled")); !ok {
		t.Fatal("a transient Poll's state write was discarded")
	}
}

// deadLetters sends every record to its dead-letter stream, which it
// does not declare: the runtime allows it.
type deadLetters struct{ scanner }

func (deadLetters) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	return ctx.Produce(sdk.DeadLetterStream("scan"), rec)
}

func TestHarnessAllowsTheDeadLetterStream(t *testing.T) {
	h, err := sdktest.New(func() sdk.Operator { return deadLetters{} })
	must(t, err)
	must(t, h.Send("in", sdk.Record{Key: []byte("k")}))
	if got := h.Take("scan.deadletter"); len(got) != 1 {
		t.Fatalf("dead letters: got %d, want 1", len(got))
	}
}

// badInit fails Init and counts Close calls.
type badInit struct {
	scanner
	closes *int
}

func (badInit) Init(sdk.Context) error { return errors.New("no broker") }
func (b badInit) Close(sdk.Context) error {
	*b.closes++
	return errors.New("close failed")
}

// New closes an operator whose Init failed (the first incarnation when
// the failure restarts it, then the second) and reports Close's error.
func TestHarnessNewClosesAFailedInit(t *testing.T) {
	closes := 0
	_, err := sdktest.New(func() sdk.Operator { return badInit{closes: &closes} })
	if err == nil || !strings.Contains(err.Error(), "no broker") || !strings.Contains(err.Error(), "close after the failed init: close failed") {
		t.Fatalf("New: got %v, want Init's and Close's errors", err)
	}
	if closes != 2 {
		t.Fatalf("Close called %d times, want 2 (both incarnations)", closes)
	}
}
