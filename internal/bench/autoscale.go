package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sluicehq/sluice/autoscale"
	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// LoadStepConfig sets up the autoscaler's load step.
type LoadStepConfig struct {
	// Dir is the node's data directory.
	Dir string
	// Parallelism fixes work's instances; 0 lets the autoscaler size it
	// within [1, 4].
	Parallelism int
	// Low and High are the input rates before and after the step
	// (records/s); Cost is work's time per record (one instance takes
	// less than 1/Cost records/s).
	Low, High float64
	Cost      time.Duration
	// Limit is how long the high rate lasts at most.
	Limit time.Duration
}

// LoadStep is what RunLoadStep measured.
type LoadStep struct {
	// Met is from the step to the output meeting the input: the start of
	// 5 s over which the sink's lag behind the source stayed under a
	// quarter of a second of input (0 or a few milliseconds when the
	// instances were enough from the start); MetOK says it came within
	// Limit.
	Met   time.Duration
	MetOK bool
	// Up and Down are the autoscaler's changes at the high rate and after
	// it dropped back; MaxAt the most instances.
	Up, Down, MaxAt int
	// Stall is the longest gap in the sink's input after the step.
	Stall time.Duration
}

// RunLoadStep runs testkinds' paced generator → work (Cost per record,
// keyed) → sink exactly-once embedded, the autoscaler sampling every
// second over a 5 s window (cool-down 5 s, down-scales after 10 s); 5 s
// at Low, then High until the output met it for 5 s, or Limit,
// then, autoscaled, Low again until work is back at one instance (at
// most 40 s).
func RunLoadStep(cfg LoadStepConfig) (LoadStep, error) {
	var res LoadStep
	pace, arrivals := &testkinds.Pace{}, &testkinds.Arrivals{}
	pace.Set(cfg.Low)
	work := testkinds.Worker{Parallelism: cfg.Parallelism, Cost: cfg.Cost}
	if cfg.Parallelism == 0 {
		work.Parallelism = 1
		work.Autoscale = &sdk.AutoscaleSpec{Min: 1, Max: 4, CoolDown: 5 * time.Second, ScaleDownAfter: 10 * time.Second}
	}
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: cfg.Dir, NoSync: true}, HTTP: "127.0.0.1:0",
		Autoscale: control.AutoscaleConfig{Interval: time.Second, Policy: autoscale.Config{Window: 5 * time.Second}}},
		testkinds.PacedGen(1000, pace), func() sdk.Operator { return work }, func() sdk.Operator { return testkinds.Tally{Arrivals: arrivals} })
	if err != nil {
		return res, fmt.Errorf("load step: %w", err)
	}
	defer func() {
		_ = rt.Stop(context.Background())
		_ = os.RemoveAll(cfg.Dir)
	}()
	watch := testkinds.Observe(func() int {
		spec, _ := rt.Node().Topology().Find("work")
		return spec.Meta.Parallelism
	})
	defer watch.Stop()
	lag := func() int64 {
		var gen int64
		for _, st := range rt.Status() {
			if st.Name == "gen" {
				for _, in := range st.Instances {
					gen += in.Produced
				}
			}
		}
		return gen - arrivals.Count()
	}
	// until polls cond every 10 ms for at most d; it says whether cond held.
	until := func(d time.Duration, cond func() bool) bool {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if cond() {
				return true
			}
		}
		return false
	}
	time.Sleep(5 * time.Second) // the low rate's 5 s: the load's schedule
	step := time.Now()
	pace.Set(cfg.High)
	// Met: the start of the first 5 s over which the lag stayed under a
	// quarter of a second of input.
	var streak time.Time
	if until(cfg.Limit, func() bool {
		if lag() >= int64(cfg.High/4) {
			streak = time.Time{}
		} else if streak.IsZero() {
			streak = time.Now()
		}
		return !streak.IsZero() && time.Since(streak) >= 5*time.Second
	}) {
		res.Met, res.MetOK = streak.Sub(step), true
	}
	res.Up = len(watch.Changes())
	drop := time.Now()
	pace.Set(cfg.Low)
	if work.Autoscale != nil {
		until(40*time.Second, func() bool { return watch.Current() == 1 })
	}
	res.Stall = arrivals.MaxGap(step, drop)
	for _, c := range watch.Changes() {
		res.MaxAt = max(res.MaxAt, c.To)
	}
	res.MaxAt = max(res.MaxAt, work.Parallelism)
	res.Down = len(watch.Changes()) - res.Up
	return res, nil
}

// autoscaleRows runs the load step autoscaled in [1, 4] and at a fixed 4
// and 1 instances, once each whatever the table's runs (a run takes up
// to a minute and a half).
func (t *tabler) autoscaleRows() ([]row, error) {
	const low, high, cost, limit = 150.0, 1500.0, time.Millisecond, 40 * time.Second
	var rows []row
	for _, p := range []int{0, 4, 1} {
		name := "autoscale load step 150 → 1500/s, autoscaled [1, 4]"
		if p > 0 {
			name = fmt.Sprintf("  fixed at %d instances", p)
		}
		fmt.Fprintf(t.w, "  %s…", name)
		r, err := RunLoadStep(LoadStepConfig{Dir: fmt.Sprintf("%s/autoscale-%d", t.cfg.TempDir, p), Parallelism: p, Low: low, High: high, Cost: cost, Limit: limit})
		if err != nil {
			fmt.Fprintln(t.w)
			return nil, err
		}
		met := "not met within " + limit.String()
		if r.MetOK {
			met = r.Met.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(t.w, " met %s, %d up / %d down, at most %d instances, longest sink gap %v\n", met, r.Up, r.Down, r.MaxAt, r.Stall.Round(time.Millisecond))
		note := fmt.Sprintf("step → output meets the input; %d changes up, %d down (at most %d instances); longest sink gap %v", r.Up, r.Down, r.MaxAt, r.Stall.Round(time.Millisecond))
		if p == 0 {
			note += "; work 1 ms/record, exactly-once, sampled every 1 s; one run each"
		}
		rows = append(rows, row{name, met, "", "", note})
	}
	return rows, nil
}
