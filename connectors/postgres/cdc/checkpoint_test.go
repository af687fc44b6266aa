package cdc_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/sluicehq/sluice/connectors/postgres/cdc"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
)

// TestSlotConfirmedOnlyAtCompletedCheckpoints: the slot's
// confirmed_flush_lsn stays put while transactions are produced and a
// checkpoint is taken (though status updates go to the server), moves to
// the checkpoint's position when it completes, not further; a crash
// restored to that checkpoint produces exactly what followed it again.
func TestSlotConfirmedOnlyAtCompletedCheckpoints(t *testing.T) {
	pg := logical(t)
	stats := new(cdc.Stats)
	cfg := config(pg, stats)
	cfg.StatusInterval = 20 * time.Millisecond
	h := harness(t, cfg)
	sluicetest.Must(t, h.Poll())
	start := slotLSN(t, pg, cfg.Slot)
	insert := func(from, to int) {
		for i := from; i < to; i++ {
			pg.Exec(fmt.Sprintf("INSERT INTO items VALUES (%d, 'x', %d)", i, i))
		}
	}
	// statuses polls until the server has had n more status updates, and
	// returns the slot's LSN then.
	statuses := func(n int64) pglogrepl.LSN {
		t.Helper()
		want := stats.Statuses() + n
		sluicetest.WaitEvery(t, waitTimeout, time.Millisecond, "status updates sent", func() bool {
			sluicetest.Must(t, h.Poll())
			return stats.Statuses() >= want
		})
		return slotLSN(t, pg, cfg.Slot)
	}

	insert(0, 3)
	pollUntil(t, h, 3)
	sluicetest.Must(t, h.Checkpoint(1))
	at1 := pglogrepl.LSN(stats.Produced())
	insert(3, 5)
	after1 := pollUntil(t, h, 2)
	if got := statuses(3); got != start {
		t.Fatalf("slot at %v after checkpoint 1 was taken but not completed, want %v (where it started)", got, start)
	}
	sluicetest.Must(t, h.Complete(1))
	if got := slotLSN(t, pg, cfg.Slot); got != at1 {
		// Commit sent it at once; the server takes it asynchronously.
		sluicetest.WaitEvery(t, waitTimeout, 10*time.Millisecond, "the slot at checkpoint 1's position", func() bool {
			return slotLSN(t, pg, cfg.Slot) == at1
		})
	}
	if got, produced := statuses(3), pglogrepl.LSN(stats.Produced()); got != at1 || produced <= at1 {
		t.Fatalf("slot at %v, produced %v; want the slot at checkpoint 1's %v, behind what was produced", got, produced, at1)
	}
	if got := pglogrepl.LSN(stats.Confirmed()); got != at1 {
		t.Fatalf("Stats.Confirmed %v, want %v", got, at1)
	}

	// The process dies (its connection with it): restored to checkpoint
	// 1, the source produces the two transactions after it again, once.
	sluicetest.Must(t, h.Crash(1))
	pg.Exec("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1 AND active_pid IS NOT NULL", cfg.Slot)
	again := pollUntil(t, h, 2)
	for i := range again {
		if g, w := summary(t, again[i]), summary(t, after1[i]); g != w {
			t.Fatalf("after the crash record %d is %s, want %s", i, g, w)
		}
	}
	insert(5, 6)
	last := pollUntil(t, h, 1)
	if len(last) != 1 || !strings.Contains(summary(t, last[0]), "insert 5 ") {
		var s []string
		for _, r := range last {
			s = append(s, summary(t, r))
		}
		t.Fatalf("after the replay: %v, want the insert of 5 alone", s)
	}
	if err := h.Poll(); err != nil && !isTransient(err) {
		t.Fatal(err)
	}
	if extra := h.Take("changes"); len(extra) != 0 {
		t.Fatalf("%d records more", len(extra))
	}
}

func isTransient(err error) bool { return errors.Is(err, sdk.ErrTransient) }
