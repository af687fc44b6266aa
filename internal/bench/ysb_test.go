package bench

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/samples/ysb"
)

// The ysb group runs at tiny sizes: its rows come out with figures (each
// run's output was checked exact). The figures themselves are not checked.
func TestTableYSBGroupRuns(t *testing.T) {
	var out bytes.Buffer
	err := Table(&out, TableConfig{Runs: 1, Scenarios: []string{"ysb"}, YSBEvents: 20_000, YSBRate: 100_000,
		LatencyDuration: 300 * time.Millisecond, Q5Events: 20_000, Q8Events: 20_000})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{
		"YSB, no guarantee (baseline)",
		"YSB, exactly-once",
		"YSB JSON decode (ysb.Fields)",
		"YSB window latency p50 / p99",
		"Nexmark q5 per core",
		"Nexmark q8, exactly-once",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("no row %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "WRONG OUTPUT") {
		t.Errorf("a run's output was wrong:\n%s", s)
	}
}

// A paced run measures a latency for every window count whose end the
// watermark passed (all but the last window's, which end-of-stream
// closes), and a sink that misses a count is reported as wrong output.
func TestYSBLatencyAndWrongOutput(t *testing.T) {
	r, err := YSB(YSBConfig{Events: 2_500, EventsPerSecond: 100, Rate: 10_000, Latency: true})
	if err != nil {
		t.Fatal(err)
	}
	// 2,500 events at 100 a second of event time: 25 s, 3 windows, the
	// last closed by end-of-stream.
	if r.Windows == 0 || len(r.Latencies) == 0 || len(r.Latencies) >= r.Windows {
		t.Fatalf("%d latencies for %d window counts: want some, fewer than the counts", len(r.Latencies), r.Windows)
	}
	for _, l := range r.Latencies {
		if l < 0 {
			t.Fatalf("negative latency %v", l)
		}
	}
	s := &ysbSink{counts: map[ysb.WindowKey]int64{{Campaign: "c", Start: 0}: 1}}
	if err := s.check(map[ysb.WindowKey]int64{{Campaign: "c", Start: 0}: 2}); !errors.Is(err, errWrongOutput) {
		t.Fatalf("check of a wrong count: %v, want errWrongOutput", err)
	}
}
