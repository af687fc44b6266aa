package sdktest_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/placement"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// counter counts per key, emits each new count, fails on "bad" records and
// keeps a processing-time and an event-time timer per key.
type counter struct {
	inits *int // counts Init calls across restarts
}

func (counter) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "count", Inputs: []sdk.Input{{Stream: "in", Routing: sdk.GroupBy}}, Outputs: []string{"out"}, Parallelism: 2, KeyGroups: 16}
}

func (c counter) Init(sdk.Context) error {
	if c.inits != nil {
		*c.inits++
	}
	return nil
}

func (counter) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	n, err := sdk.GetInt64(ctx.State(), rec.Key)
	if err != nil {
		return err
	}
	sdk.PutInt64(ctx.State(), rec.Key, n+1)
	if err := ctx.Produce("out", sdk.Record{Key: rec.Key, Value: strconv.AppendInt(nil, n+1, 10)}); err != nil {
		return err
	}
	if err := ctx.SetTimer(string(rec.Key), rec.EventTime.Add(time.Minute)); err != nil {
		return err
	}
	if err := ctx.SetEventTimer(string(rec.Key), rec.EventTime.Add(time.Second)); err != nil {
		return err
	}
	switch string(rec.Value) {
	case "bad":
		return errors.New("bad record")
	case "panic":
		panic("boom")
	case "undeclared":
		return ctx.Produce("nowhere", rec)
	}
	return nil
}

func (counter) ProcessTimer(ctx sdk.Context, key string, at time.Time) error {
	n, err := sdk.GetInt64(ctx.State(), []byte(key))
	if err != nil {
		return err
	}
	return ctx.Produce("out", sdk.Record{Key: []byte("timer:" + key), Value: strconv.AppendInt(nil, n, 10)})
}

func (counter) ProcessEventTimer(ctx sdk.Context, key string, at time.Time) error {
	return ctx.Produce("out", sdk.Record{Key: []byte("etimer:" + key), Value: []byte(ctx.Watermark().Format(time.RFC3339))})
}

func values(recs []sdk.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Key)+"="+string(r.Value))
	}
	return out
}

func TestHarnessStateTimersAndRollback(t *testing.T) {
	inits := 0
	h, err := sdktest.New(func() sdk.Operator { return counter{inits: &inits} })
	if err != nil {
		t.Fatal(err)
	}
	t0 := sdktest.Start
	// Instance 0 of 2 over 16 groups owns groups [0, 8): pick keys there.
	var keys []string
	for i := 0; len(keys) < 2; i++ {
		k := "k" + strconv.Itoa(i)
		if placement.KeyGroupString(k, 16) < 8 {
			keys = append(keys, k)
		}
	}
	a, b := keys[0], keys[1]
	if err := h.Send("in", sdk.Record{Key: []byte(a), EventTime: t0}, sdk.Record{Key: []byte(a), EventTime: t0.Add(time.Second)},
		sdk.Record{Key: []byte(b), EventTime: t0}); err != nil {
		t.Fatal(err)
	}
	if got, want := values(h.Take("out")), []string{a + "=1", a + "=2", b + "=1"}; !slices.Equal(got, want) {
		t.Fatalf("outputs: got %v, want %v", got, want)
	}
	// A failing record: no state, timer or output change, restart + Init.
	before, etBefore := h.State(), h.EventTimers()
	for _, v := range []string{"bad", "panic", "undeclared"} {
		err := h.Send("in", sdk.Record{Key: []byte(a), Value: []byte(v), EventTime: t0.Add(time.Hour)})
		if err == nil {
			t.Fatalf("%s: no error", v)
		}
		if v == "undeclared" && !errors.Is(err, sdk.ErrUnknownStream) {
			t.Fatalf("undeclared: got %v, want ErrUnknownStream", err)
		}
	}
	if got := h.State(); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("state after failures: got %v, want %v", got, before)
	}
	if got := h.EventTimers(); fmt.Sprint(got) != fmt.Sprint(etBefore) {
		t.Fatalf("event timers after failures: got %v, want %v", got, etBefore)
	}
	if n := len(h.Output("out")); n != 0 {
		t.Fatalf("failed attempts produced %d records", n)
	}
	if h.Restarts() != 3 || inits != 4 {
		t.Fatalf("restarts %d, inits %d: want 3 and 4", h.Restarts(), inits)
	}
	v, ok := h.Get([]byte(a), []byte(a))
	if n, _ := sdk.BytesInt64(v); !ok || n != 2 {
		t.Fatalf("state of %s: got %d (%v), want 2", a, n, ok)
	}
	// Event timers fire in time order when the watermark passes them.
	if err := h.AdvanceWatermark(t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, want := values(h.Take("out")), []string{"etimer:" + b + "=" + t0.Add(time.Second).Format(time.RFC3339)}; !slices.Equal(got, want) {
		t.Fatalf("event timers at t0+1s: got %v, want %v", got, want)
	}
	if err := h.AdvanceWatermark(t0); err == nil {
		t.Fatal("a watermark going back was accepted")
	}
	// Processing time: both timers due at t0+1m and t0+1m1s.
	if err := h.AdvanceTime(time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := values(h.Take("out")); !slices.Equal(got, []string{"timer:" + b + "=1"}) {
		t.Fatalf("timers at +1m: got %v", got)
	}
	if got := h.Timers(); len(got) != 1 || got[0].Key != a || !got[0].At.Equal(t0.Add(time.Minute+time.Second)) {
		t.Fatalf("pending timers: got %v", got)
	}
	if err := h.End(); err != nil {
		t.Fatal(err)
	}
	out := h.Take("out")
	if got := values(out); !slices.Equal(got, []string{"etimer:" + a + "=" + sdktest.EndOfTime.Format(time.RFC3339)}) {
		t.Fatalf("end of input: got %v", got)
	}
	if !out[0].EventTime.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("event timer output's event time: got %v, want the timer's time", out[0].EventTime)
	}
	if err := h.Send("in", sdk.Record{Key: []byte(a)}); err == nil {
		t.Fatal("send after End accepted")
	}
}

// scanner writes per key and scans with an empty prefix: it must see its
// key group only.
type scanner struct{}

func (scanner) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "scan", Inputs: []sdk.Input{{Stream: "in", Routing: sdk.GroupBy}}, Outputs: []string{"out"}, KeyGroups: 4}
}
func (scanner) Init(sdk.Context) error { return nil }
func (scanner) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	ctx.State().Set(rec.Key, rec.Value)
	var seen []byte
	err := ctx.State().Scan(nil, func(k, _ []byte) error { seen = append(append(seen, k...), ','); return nil })
	if err != nil {
		return err
	}
	return ctx.Produce("out", sdk.Record{Key: rec.Key, Value: seen})
}
func (scanner) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

func TestHarnessScanSeesCurrentKeyGroup(t *testing.T) {
	h, err := sdktest.New(func() sdk.Operator { return scanner{} })
	if err != nil {
		t.Fatal(err)
	}
	groups := map[int][]string{}
	for i := 0; i < 40; i++ {
		k := "k" + strconv.Itoa(i)
		g := placement.KeyGroupString(k, 4)
		groups[g] = append(groups[g], k)
		if err := h.Send("in", sdk.Record{Key: []byte(k)}); err != nil {
			t.Fatal(err)
		}
		out := h.Take("out")
		want := slices.Sorted(slices.Values(groups[g]))
		var w string
		for _, k := range want {
			w += k + ","
		}
		if string(out[0].Value) != w {
			t.Fatalf("scan after %s (group %d): got %q, want %q", k, g, out[0].Value, w)
		}
	}
}

func TestHarnessRefusesBadMetadataAndInput(t *testing.T) {
	bad := func() sdk.Operator { return badMeta{} }
	if _, err := sdktest.New(bad); err == nil {
		t.Fatal("bad metadata accepted")
	}
	h, err := sdktest.New(func() sdk.Operator { return scanner{} })
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Send("other", sdk.Record{}); err == nil {
		t.Fatal("a stream the operator does not read was accepted")
	}
	if err := h.Poll(); err == nil {
		t.Fatal("Poll on a non-source accepted")
	}
}

type badMeta struct{ scanner }

func (badMeta) Metadata() sdk.Metadata { return sdk.Metadata{Name: "bad name!"} }
