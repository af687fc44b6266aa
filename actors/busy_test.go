package actors_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
)

// slowSink spends perRecord in each ProcessRecord: work the instance's
// Busy time must account.
type slowSink struct{ perRecord time.Duration }

func (s *slowSink) Metadata() core.Metadata {
	return core.Metadata{Name: "slow", Inputs: []core.Input{{Stream: "words", Routing: core.Shuffle}}, Parallelism: 1}
}
func (s *slowSink) Init(core.Context) error { return nil }
func (s *slowSink) ProcessRecord(core.Context, core.Record) error {
	time.Sleep(s.perRecord) // the work being measured, not synchronisation
	return nil
}
func (s *slowSink) ProcessTimer(core.Context, string, time.Time) error { return nil }

// TestBusyCountsWorkNotIdleness: a sink taking 2 ms per record is busy
// at least 2 ms × records, less than the time since it started, and not
// at all once its input is done (no spell stays open); a source whose Poll
// never produces is idle however often it is polled.
func TestBusyCountsWorkNotIdleness(t *testing.T) {
	const records, per = 300, 2 * time.Millisecond
	start := time.Now()
	n := startNode(t, t.TempDir(),
		func() core.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "words", Count: records, Key: sluicetest.Key(50)}
		},
		func() core.Operator { return &slowSink{perRecord: per} },
		func() core.Operator {
			return &sluicetest.Gen{Name: "idle", Stream: "nothing", Count: 10, Gate: func(int) bool { return false }}
		},
	)
	sluicetest.WaitFor(t, time.Minute, "every record through the slow sink", func() bool { return processed(n, "slow") == records })
	elapsed := time.Since(start)
	busy := instanceStatus(n, "slow", 0).Busy
	if busy < records*per {
		t.Fatalf("slow sink busy %v for %d records of %v each, want at least %v", busy, records, per, records*per)
	}
	if busy > elapsed {
		t.Fatalf("slow sink busy %v, more than the %v since the node started", busy, elapsed)
	}
	if again := instanceStatus(n, "slow", 0).Busy; again != busy {
		t.Fatalf("slow sink's busy time grew from %v to %v with its input done: a spell stayed open", busy, again)
	}
	if idle := instanceStatus(n, "idle", 0); idle.Busy != 0 || idle.Produced != 0 {
		t.Fatalf("a source producing nothing (%d produced) was busy %v, want 0", idle.Produced, idle.Busy)
	}
	if g := instanceStatus(n, "gen", 0); g.Busy <= 0 {
		t.Fatalf("the producing source's busy time is %v, want > 0", g.Busy)
	}
}
