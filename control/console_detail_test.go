package control_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/testkinds"
)

// TestConsoleDeadLettersAndWatermarks: the snapshot shows an operator's
// recent dead letters with their headers (a poison record's sluice-error),
// each instance's event-time watermark, and a finished source as finished
// with the end-of-input watermark.
func TestConsoleDeadLettersAndWatermarks(t *testing.T) {
	rt := testkinds.StartPoisonPipeline(t)
	base := testkinds.PoisonBase
	a := client{t: t, base: "http://" + rt.HTTPAddr()}

	snap := waitSnapshot(a, "picky's dead letter, watermarks and few finished", func(snap api.ConsoleSnapshot) bool {
		p, _ := findOp(snap, "picky")
		ticks, _ := findOp(snap, "ticks")
		few, _ := findOp(snap, "few")
		return len(p.RecentDeadLetters) > 0 && len(p.Detail) == 1 && p.Detail[0].Watermark != nil &&
			len(ticks.Detail) == 1 && ticks.Detail[0].Watermark != nil && len(few.Detail) == 1 && few.Detail[0].Finished
	})
	p, _ := findOp(snap, "picky")
	dl := p.RecentDeadLetters[0]
	headers := map[string]string{}
	for _, h := range dl.Headers {
		headers[h.Key] = h.Value
	}
	if dl.Value != "7" || dl.ValueBytes != 1 || dl.Key != "k" || dl.Node != rt.Node().ID() || dl.Index != 0 || dl.Time.IsZero() ||
		!strings.Contains(headers["sluice-error"], "poison record 7") || headers["sluice-attempts"] != "1" || headers["sluice-stream"] != "ticks" {
		t.Fatalf("picky's dead letter %+v, want record 7 with its error", dl)
	}
	if len(p.RecentDeadLetters) != 1 || p.DeadLetters != 1 {
		t.Fatalf("picky has %d dead letters (%d recent), want the one poison record", p.DeadLetters, len(p.RecentDeadLetters))
	}
	// Monotonic event times a millisecond apart: the watermarks are event
	// times the source produced, not the end of input.
	ticks, _ := findOp(snap, "ticks")
	for _, in := range []api.ConsoleInstance{ticks.Detail[0], p.Detail[0]} {
		if wm := *in.Watermark; wm.Before(base) || wm.After(base.Add(time.Hour)) || in.Finished {
			t.Fatalf("instance %s/%d: watermark %v finished %v, want an event time after %v, running", in.Node, in.Index, wm, in.Finished, base)
		}
	}
	few, _ := findOp(snap, "few")
	if wm := few.Detail[0].Watermark; wm == nil || wm.Year() < 2262 {
		t.Fatalf("finished source few: watermark %v, want the end of time", wm)
	}
}
