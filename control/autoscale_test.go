package control_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/autoscale"
	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/persistence"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// TestAutoscaleLoadStep steps the input of a keyed pipeline up tenfold
// and back down under exactly-once, with the real autoscaler (sampling
// every 500 ms rather than 5 s, a 3 s window, a 6 s stabilisation window
// of down-scales): the bottleneck is scaled up within 30 s of the step,
// down within the stabilisation window (and the samples it takes) once
// the load drops, with at most two changes each way, and every key is
// counted exactly, at the bottleneck and at the sink. The longest stall
// of the sink's input around each change is logged, not asserted: a
// loaded 2-core machine under -race schedules it late by hundreds of
// milliseconds.
func TestAutoscaleLoadStep(t *testing.T) {
	const (
		keys           = 500
		low, high      = 150.0, 1500.0
		cost           = time.Millisecond // one instance takes < 1000/s
		scaleDownAfter = 6 * time.Second
		window         = 3 * time.Second
	)
	dir := t.TempDir()
	pace, arrivals := &testkinds.Pace{}, &testkinds.Arrivals{}
	pace.Set(low)
	spec := &sdk.AutoscaleSpec{Min: 1, Max: 4, ScaleDownAfter: scaleDownAfter, CoolDown: 2 * time.Second}
	rt, err := node.Start(context.Background(), node.Config{
		NodeConfig: node.NodeConfig{DataDir: dir, NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0", Guarantee: sdk.ExactlyOnce,
		Autoscale: control.AutoscaleConfig{Interval: 500 * time.Millisecond, Policy: autoscale.Config{Window: window}}},
		testkinds.PacedGen(keys, pace),
		func() sdk.Operator { return testkinds.Worker{Parallelism: 1, Cost: cost, Autoscale: spec} },
		func() sdk.Operator { return testkinds.Tally{Arrivals: arrivals} })
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = rt.Stop(context.Background())
		}
	})
	a := client{t: t, base: "http://" + rt.HTTPAddr()}
	watch := testkinds.Observe(func() int {
		spec, _ := rt.Node().Topology().Find("work")
		return spec.Meta.Parallelism
	})
	t.Cleanup(watch.Stop)
	decided := func() api.AutoscaleDecision {
		var st api.AutoscaleStatus
		if code := a.do("GET", "/v1/autoscale", nil, &st); code != 200 {
			t.Fatalf("GET /v1/autoscale = %d", code)
		}
		for _, d := range st.Operators {
			if d.Operator == "work" {
				return d
			}
		}
		return api.AutoscaleDecision{}
	}
	// decisionsAfter waits for n more decisions taken after since.
	decisionsAfter := func(since time.Time, n int, msg string) {
		seen := map[time.Time]bool{}
		sluicetest.WaitEvery(t, time.Minute, 100*time.Millisecond, msg, func() bool {
			if d := decided(); d.At.After(since) && d.Inputs.Samples >= 2 {
				seen[d.At] = true
			}
			return len(seen) >= n
		})
	}
	lag := func() int64 { return produced(rt, "gen") - arrivals.Count() }

	// At the low rate one instance does: the autoscaler keeps it.
	decisionsAfter(time.Now(), 4, "the autoscaler's decisions at the low rate")
	if c := watch.Changes(); len(c) != 0 {
		t.Fatalf("scaled at the low rate: %+v (last decision %+v)", c, decided())
	}

	// The step.
	step := time.Now()
	pace.Set(high)
	sluicetest.WaitFor(t, 30*time.Second, "work to be scaled up within 30 s of the step", func() bool { return watch.Current() > 1 })
	up := time.Since(step)
	// Throughput meets the input rate: the sink's lag behind the source
	// is back under half a second of input.
	sluicetest.WaitFor(t, time.Minute, "the sink to keep up with the input", func() bool {
		return time.Since(step) > up && lag() < int64(high/2)
	})
	caughtUp := time.Since(step)
	d := decided()
	t.Logf("step to %.0f/s: scaled up after %v, output meets the input after %v; now %d instances (%s)",
		high, up.Round(time.Millisecond), caughtUp.Round(time.Millisecond), watch.Current(), d.Reason)
	decisionsAfter(time.Now(), 8, "the autoscaler's decisions at the high rate")

	// The drop.
	drop := time.Now()
	pace.Set(low)
	sluicetest.WaitFor(t, scaleDownAfter+window+30*time.Second, "work to be scaled back down to 1", func() bool { return watch.Current() == 1 })
	down := time.Since(drop)
	var firstDown time.Duration
	for _, c := range watch.Changes() {
		if c.To < c.From && c.At.After(drop) && firstDown == 0 {
			firstDown = c.At.Sub(drop)
		}
	}
	t.Logf("drop to %.0f/s: first down-scale after %v, back to 1 after %v (stabilisation window %v, sample window %v)",
		low, firstDown.Round(time.Millisecond), down.Round(time.Millisecond), scaleDownAfter, window)
	// The first down-scale comes once the sample window shows the drop
	// and the stabilisation window has passed; a second one may follow
	// (the recommendations at the start of the stabilisation window still
	// averaged samples of the high load: the most of them is kept).
	if limit := scaleDownAfter + window + 5*time.Second; firstDown > limit {
		t.Errorf("first down-scale %v after the drop, want ≤ %v (the stabilisation window, the sample window and 5 s)", firstDown, limit)
	}
	if limit := 2*scaleDownAfter + spec.CoolDown + window + 5*time.Second; down > limit {
		t.Errorf("back to 1 instance %v after the drop, want ≤ %v (two stabilisation windows, the cool-down, the sample window and 5 s)", down, limit)
	}
	decisionsAfter(time.Now(), 4, "the autoscaler's decisions back at the low rate")

	// The changes: how many, and the sink's longest stall around each.
	ups, downs := 0, 0
	for _, c := range watch.Changes() {
		if c.To > c.From {
			ups++
		} else {
			downs++
		}
		t.Logf("change %d → %d at +%v from the step: longest gap in the sink's input around it %v",
			c.From, c.To, c.At.Sub(step).Round(time.Millisecond), arrivals.MaxGap(c.At.Add(-time.Second), c.At.Add(5*time.Second)).Round(time.Millisecond))
	}
	if ups < 1 || ups > 2 || downs < 1 || downs > 2 {
		t.Errorf("%d up-scales and %d down-scales (%+v), want 1 or 2 of each", ups, downs, watch.Changes())
	}

	// Everything is counted exactly once.
	pace.Set(0)
	sluicetest.WaitFor(t, time.Minute, "the pipeline to drain", func() bool {
		return progress(rt, "sink") == produced(rt, "gen") && lag() <= 0
	})
	watch.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stopped = true
	sluicetest.Must(t, rt.Stop(ctx))
	n := countedOnce(t, dir, keys, "work", "sink")
	t.Logf("%d records, each counted once by work and by sink", n)
}

// countedOnce checks that every operator of ops counted each key of the
// records the paced generator made (its position, in the stopped node's
// database in dir) once, and returns how many it made.
func countedOnce(t *testing.T, dir string, keys int64, ops ...string) int64 {
	t.Helper()
	n := generated(t, dir)
	for _, op := range ops {
		got := counts(t, dir, op)
		if int64(len(got)) != min(keys, n) {
			t.Errorf("%s counted %d keys, want %d", op, len(got), min(keys, n))
		}
		for i := range min(keys, n) {
			k := testkinds.Key(i, int(keys))
			if want := n/keys + map[bool]int64{true: 1}[i < n%keys]; got[k] != want {
				t.Errorf("%s counted key %s %d times, want %d", op, k, got[k], want)
			}
		}
	}
	return n
}

// generated reads the source's position (records generated) from a
// stopped node's database.
func generated(t *testing.T, dir string) int64 {
	t.Helper()
	db, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int64 = -1
	err = db.NewStore("gen").Scan(0, 256, nil, func(_ int, k, v []byte) error {
		var perr error
		if string(k) == "generate/next" {
			n, perr = strconv.ParseInt(string(v), 10, 64)
		}
		return perr
	})
	if err != nil || n < 0 {
		t.Fatalf("reading the source's position: %d, %v", n, err)
	}
	return n
}
