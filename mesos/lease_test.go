package mesos

import (
	"io"
	"log/slog"
	"testing"
	"time"
)

// TestWithheldCallsAreRedone: calls dropped outside the lease are made
// again once it is confirmed: a KILL, a reconciliation, REVIVE and the
// declines (kept until then).
func TestWithheldCallsAreRedone(t *testing.T) {
	h := newHarness(t, pool("p", 2, 1, 128, 3))
	h.subscribe()
	h.run(offer("a1", 4, 4096, 0))
	tm := &term{s: &Scheduler{cfg: Config{SessionTTL: 10 * time.Second, DeclineRefuse: time.Second},
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}, m: h.m, confirmed: h.now}
	if !tm.leased(h.now.Add(4*time.Second)) || tm.leased(h.now.Add(5*time.Second)) {
		t.Fatal("the lease is not SessionTTL/2")
	}
	h.advance(6 * time.Second)

	// Scale down (a KILL) and offers to decline, all outside the lease.
	out := h.m.setPools(h.now, []Pool{pool("p", 1, 1, 128, 3)})
	more := h.offers(offer("a2", 4, 4096, 0))
	out.declines = append(out.declines, more.declines...)
	if len(out.kills) != 1 || len(out.declines) != 1 {
		t.Fatalf("kills %v, declines %v", out.kills, out.declines)
	}
	victim := out.kills[0].taskID
	tm.withhold(h.now, &out)
	if len(out.kills)+len(out.declines)+len(out.reconcile)+len(out.acks) != 0 || out.revive || out.suppress {
		t.Fatalf("calls left after withholding: %+v", out)
	}
	if len(h.m.problems) == 0 || !tm.withholding {
		t.Error("withholding is not reported")
	}
	// The next input repeats the KILL (withheld again while unconfirmed).
	if out := h.m.tick(h.now); len(out.kills) != 1 || out.kills[0].taskID != victim {
		t.Fatalf("kill not repeated: %+v", out.kills)
	}
	// Confirmed again: the declines kept are sent.
	tm.confirm(h.now)
	var next output
	tm.resume(&next)
	if tm.withholding || len(next.declines) != 1 || len(next.declines[0].offerIDs) != 1 {
		t.Fatalf("after the lease was confirmed: withholding %v, declines %+v", tm.withholding, next.declines)
	}
	if err := tm.checkLease(h.now.Add(20 * time.Second)); err != nil {
		t.Errorf("checkLease within 2×SessionTTL: %v", err)
	}
	if err := tm.checkLease(h.now.Add(21 * time.Second)); err == nil {
		t.Error("no step-down after 2×SessionTTL without confirmation")
	}
}
