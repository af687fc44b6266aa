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

// numbers produces records 0..n-1 with keys k<i mod 5>, 10 per Poll, then
// ends; its position is in State.
type numbers struct {
	n  int64
	wm *sdk.WatermarkStrategy
}

func (s numbers) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "numbers", Outputs: []string{"in"}, Watermarks: s.wm}
}
func (numbers) Init(sdk.Context) error { return nil }
func (numbers) ProcessRecord(sdk.Context, sdk.Record) error {
	return errors.New("numbers has no inputs")
}
func (numbers) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
func (s numbers) Poll(ctx sdk.Context) error {
	pos, err := sdk.GetInt64(ctx.State(), []byte("pos"))
	if err != nil {
		return err
	}
	for range 10 {
		if pos == s.n {
			return sdk.ErrEndOfStream
		}
		t := sdktest.Start.Add(time.Duration(pos) * time.Second)
		if err := ctx.Produce("in", sdk.Record{Key: []byte("k" + strconv.FormatInt(pos%5, 10)), EventTime: t}); err != nil {
			return err
		}
		pos++
		sdk.PutInt64(ctx.State(), []byte("pos"), pos)
	}
	return nil
}

func TestGraphRoutesByKeyGroupAndEnds(t *testing.T) {
	g, err := sdktest.NewGraph([]sdk.Factory{
		func() sdk.Operator { return counter{} }, // listed first: the graph orders by streams
		func() sdk.Operator { return numbers{n: 95} },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.RunSources(100); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	etimers := 0
	for _, r := range g.Take("out") {
		if string(r.Key[:min(len(r.Key), 7)]) == "etimer:" {
			etimers++
			continue
		}
		n, _ := strconv.Atoi(string(r.Value))
		counts[string(r.Key)] = max(counts[string(r.Key)], n)
	}
	if len(counts) != 5 || etimers != 5 {
		t.Fatalf("counts %v, %d event timers fired: want 5 keys of 19 and 5", counts, etimers)
	}
	for k, n := range counts {
		if n != 19 {
			t.Fatalf("count of %s: got %d, want 19", k, n)
		}
		own := placement.InstanceFor(placement.KeyGroupString(k, 16), 16, 2)
		if _, ok := g.Instance("count", own).Get([]byte(k), []byte(k)); !ok {
			t.Fatalf("%s's count is not in instance %d, which owns its key group", k, own)
		}
		if _, ok := g.Instance("count", 1-own).Get([]byte(k), []byte(k)); ok {
			t.Fatalf("%s's count is also in instance %d", k, 1-own)
		}
	}
	if len(g.Instance("count", 0).EventTimers())+len(g.Instance("count", 1).EventTimers()) != 0 {
		t.Fatal("event timers left after End")
	}
}

// TestGraphFollowsSourceWatermarks: a source's watermark strategy moves
// the watermark downstream after each Poll.
func TestGraphFollowsSourceWatermarks(t *testing.T) {
	g, err := sdktest.NewGraph([]sdk.Factory{
		func() sdk.Operator {
			return numbers{n: 95, wm: &sdk.WatermarkStrategy{OutOfOrderness: 2 * time.Second}}
		},
		func() sdk.Operator { return counter{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.PollSources(); err != nil {
		t.Fatal(err)
	}
	// Records 0..9 at t0+0s..9s: watermark 9s − 2s.
	for j := range 2 {
		if wm := g.Instance("count", j).Watermark(); !wm.Equal(sdktest.Start.Add(7 * time.Second)) {
			t.Fatalf("count %d: watermark %v, want start+7s", j, wm.Sub(sdktest.Start))
		}
	}
	// Event timers at t0+6s and t0+7s (records 5 and 6, keys k0 and k1) fired.
	fired := 0
	for _, r := range g.Take("out") {
		if len(r.Key) > 7 && string(r.Key[:7]) == "etimer:" {
			fired++
		}
	}
	if fired != 2 {
		t.Fatalf("%d event timers fired, want 2", fired)
	}
}

// picky forwards its records to "out" and refuses the one keyed "bad" as
// a bad record.
type picky struct{}

func (picky) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "picky", Inputs: []sdk.Input{{Stream: "in"}}, Outputs: []string{"out"}}
}
func (picky) Init(sdk.Context) error { return nil }
func (picky) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	if string(rec.Key) == "bad" {
		return fmt.Errorf("picky: %w: key bad", sdk.ErrBadRecord)
	}
	return ctx.Produce("out", rec)
}
func (picky) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// A record refused as bad is dead-lettered with the runtime's headers and
// the records after it are still delivered, without a restart; the
// refusal is returned once the graph is quiet.
func TestGraphDeadLettersBadRecordsAndGoesOn(t *testing.T) {
	g, err := sdktest.NewGraph([]sdk.Factory{func() sdk.Operator { return picky{} }})
	if err != nil {
		t.Fatal(err)
	}
	err = g.Send("in", sdk.Record{Key: []byte("a")}, sdk.Record{Key: []byte("bad")}, sdk.Record{Key: []byte("c")})
	if !errors.Is(err, sdk.ErrBadRecord) {
		t.Fatalf("Send: got %v, want the bad record's error", err)
	}
	var out []string
	for _, r := range g.Take("out") {
		out = append(out, string(r.Key))
	}
	if !slices.Equal(out, []string{"a", "c"}) {
		t.Errorf("out = %v, want [a c]: the record after the bad one must still be delivered", out)
	}
	dl := g.Take(sdk.DeadLetterStream("picky"))
	if len(dl) != 1 || string(dl[0].Key) != "bad" {
		t.Fatalf("dead letters %v, want the bad record", dl)
	}
	want := map[string]string{sdk.HeaderAttempts: "1", sdk.HeaderOperator: "picky", sdk.HeaderStream: "in"}
	for _, h := range dl[0].Headers {
		if w, ok := want[h.Key]; ok && h.Value != w {
			t.Errorf("header %s = %q, want %q", h.Key, h.Value, w)
		}
		delete(want, h.Key)
	}
	if len(want) > 0 {
		t.Errorf("dead letter lacks headers %v", want)
	}
}
