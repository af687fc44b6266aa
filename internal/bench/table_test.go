package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/proctest"
)

// The table's groups run at small sizes: their rows come out, the
// runtime's latency breakdown has its stages, and -profile writes
// profiles. The figures themselves are not checked (no timing in tests).
func TestTableGroupsRun(t *testing.T) {
	var out bytes.Buffer
	prof := t.TempDir()
	err := Table(&out, TableConfig{Runs: 1, Records: 10_000, TempDir: t.TempDir(), Scenarios: []string{"eo", "latency"},
		Profile: prof, EORecords: 10_000, LatencyDuration: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{
		"sluice keyed word count, exactly-once",
		"e2e latency p50 / p99 / p99.9 at 90% of saturation",
		"breakdown at 10%, metrics on",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no row %q in\n%s", want, s)
		}
	}
	// Both operators that take input have the samples of every stage of
	// their records (commits come every 200 ms: a short run may have none).
	for _, op := range []string{"count", "sink"} {
		found := false
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), op+" ") && strings.Contains(l, "sent ") {
				found = true
				for _, stage := range []string{"sent", "queue", "process", "e2e"} {
					if strings.Contains(l, stage+" -") {
						t.Errorf("%s's breakdown has no %s samples: %s", op, stage, l)
					}
				}
			}
		}
		if !found {
			t.Errorf("no breakdown line for %s in\n%s", op, s)
		}
	}
	for _, f := range []string{"word-count-exactly-once-1.cpu.pprof", "word-count-exactly-once-1.allocs.pprof", "word-count-at-10-latency-breakdown-1.cpu.pprof"} {
		if fi, err := os.Stat(filepath.Join(prof, f)); err != nil || fi.Size() == 0 {
			t.Errorf("profile %s: %v", f, err)
		}
	}
}

// The exactly-once Kafka word count's counts reach a read_committed
// consumer.
func TestSluiceKafkaWordCountEO(t *testing.T) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	r, err := SluiceKafkaWordCountEO(KafkaWordCountConfig{Broker: b, Records: 2000, Partitions: 2}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops != 2000 || len(r.Latencies) != 2000 {
		t.Fatalf("%d records, %d latencies; want 2000 each", r.Ops, len(r.Latencies))
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"word count at 10%, latency breakdown": "word-count-at-10-latency-breakdown",
		"Sluice cross-node":                    "sluice-cross-node",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// A node process with a little state is SIGKILLed and recovers: every
// phase is measured.
func TestRecoverySIGKILL(t *testing.T) {
	bin, err := proctest.Build(t.TempDir(), "github.com/sluicehq/sluice/internal/testnode", false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := RecoverySIGKILL(RecoveryConfig{NodeBinary: bin, Dir: t.TempDir(), State: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.StateBytes < 3<<20 || r.Before <= 0 || r.Start <= 0 || r.Restore < 0 || r.Total < r.Start+r.Restore+r.Replay {
		t.Fatalf("%+v: want ≥ 3 MB of state, a rate before, and phases within the total", r)
	}
	t.Logf("%+v", r)
}

// The cross group runs against real node processes and a Consul agent,
// alternating the baseline and Sluice, and reports each side's CPU time
// per record (read from /proc): both sides of both scenarios used some.
// Every process of both rows (the baseline's sender and sink too) writes
// its profiles when asked to.
func TestCrossRowsReportCPUPerSide(t *testing.T) {
	bin, err := proctest.Build(t.TempDir(), "github.com/sluicehq/sluice/internal/testnode", false)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	profiles := t.TempDir()
	err = Table(&out, TableConfig{Runs: 1, Records: 200_000, TempDir: t.TempDir(), Scenarios: []string{"cross"},
		NodeBinary: bin, ConsulAddr: consultest.Start(t).Addr(), Profile: profiles})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, name := range []string{"CPU per message, sender / receiver", "CPU per record, near / far node"} {
		i := strings.Index(s, name)
		if i < 0 {
			t.Fatalf("no row %q in\n%s", name, s)
		}
		var a, b float64
		if _, err := fmt.Sscanf(strings.TrimSpace(s[i+len(name):]), "%f / %f", &a, &b); err != nil || a <= 0 || b <= 0 {
			t.Errorf("row %q: %v, sides %v and %v; want both > 0 in\n%s", name, err, a, b, s)
		}
	}
	if !regexp.MustCompile(`generator was blocked by backpressure \(waiting for the far node\) \d+% of the time`).MatchString(s) {
		t.Errorf("no share of time blocked in\n%s", s)
	}
	if !regexp.MustCompile(`runs [\d.]+[kM]?–[\d.]+[kM]?/s, pairs [\d.]+–[\d.]+×`).MatchString(s) {
		t.Errorf("no spread of Sluice's runs and pairs in\n%s", s)
	}
	for _, f := range []string{"protoactor-remote-one-way-1.send.cpu.pprof", "protoactor-remote-one-way-1.sink.allocs.pprof",
		"sluice-cross-node-1.near.cpu.pprof", "sluice-cross-node-1.far.allocs.pprof"} {
		if fi, err := os.Stat(filepath.Join(profiles, f)); err != nil || fi.Size() == 0 {
			t.Errorf("profile %s: %v; want a written file", f, err)
		}
	}
}

// The spread of runs and of alternating pairs is each run's rate, not the
// medians': with a baseline of 1 M and 2 M msgs/s and Sluice at 3 M and
// 3 M, the pairs are 3× and 1.5×.
func TestRateAndPairRanges(t *testing.T) {
	run := func(perSec int64) Result { return Result{Ops: perSec, Elapsed: time.Second} }
	base := []Result{run(1_000_000), run(2_000_000)}
	sluice := []Result{run(3_000_000), run(3_000_000)}
	if got, want := rateRange(base), "runs 1.00M–2.00M/s"; got != want {
		t.Errorf("rateRange = %q, want %q", got, want)
	}
	if got, want := pairRange(base, sluice), "pairs 1.50–3.00×"; got != want {
		t.Errorf("pairRange = %q, want %q", got, want)
	}
	if got, want := pairRange([]Result{{}, run(1_000_000)}, sluice), "pairs 3.00–3.00×"; got != want {
		t.Errorf("pairRange with a baseline run of no rate = %q, want %q (that pair skipped)", got, want)
	}
	if got, want := pairRange(nil, sluice), "no pairs"; got != want {
		t.Errorf("pairRange without a baseline = %q, want %q", got, want)
	}
	if got, want := rateRange(nil), "no runs"; got != want {
		t.Errorf("rateRange of no runs = %q, want %q", got, want)
	}
}
