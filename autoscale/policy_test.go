package autoscale_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/autoscale"
	"github.com/sluicehq/sluice/internal/core"
)

// every is the interval between samples in these tests.
const every = 5 * time.Second

// steady returns a sample of par instances sharing input records/s
// evenly, each taking at most trueRate records/s while busy.
func steady(par int, input, trueRate float64) autoscale.Sample {
	s := autoscale.Sample{Interval: every, Parallelism: par, KeyGroups: 256, InputRate: input}
	per := input / float64(par)
	busy := min(1, per/trueRate)
	for j := 0; j < par; j++ {
		took := min(per, trueRate)
		s.Instances = append(s.Instances, autoscale.InstanceSample{Index: j, FirstGroup: j * 256 / par, EndGroup: (j + 1) * 256 / par, Rate: took, Busy: busy})
		s.Rate += took
	}
	return s
}

// run feeds samples from next (given the parallelism and the step) for
// steps samples, every apart, applying each decision to scale, and returns
// the decisions that scaled and the last decision.
func run(p *autoscale.Policy, start time.Time, par, steps int, spec core.AutoscaleSpec, next func(par, step int) autoscale.Sample) (changes []autoscale.Decision, last autoscale.Decision, endPar int) {
	now := start
	for k := 0; k < steps; k++ {
		now = now.Add(every)
		last = p.Decide(now, "op", spec, next(par, k))
		if last.Scale {
			changes = append(changes, last)
			par = last.Recommended
			p.Applied("op", par, now)
		}
	}
	return changes, last, par
}

// TestDecide: each rule of the policy, one case each; the first decision
// that scales (or the last decision when none does) is checked.
func TestDecide(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	fast := core.AutoscaleSpec{CoolDown: 20 * time.Second, ScaleDownAfter: 60 * time.Second}
	cases := []struct {
		name   string
		par    int
		steps  int
		spec   core.AutoscaleSpec
		sample func(par, step int) autoscale.Sample
		// want is the first change's (from → to), or to == 0 for none
		from, to int
		// after and by bound the step of the first change
		after, by int
		reason    string
	}{
		{name: "true rate: 1000/s at 500/s per busy instance needs ceil(1000/(500×0.7)) = 3",
			par: 1, steps: 2, spec: fast, sample: func(par, _ int) autoscale.Sample { return steady(par, 1000, 500) },
			from: 1, to: 3, by: 2, reason: "needs 3 instances"},
		{name: "target utilization 0.5: ceil(1000/(500×0.5)) = 4",
			par: 1, steps: 2, spec: core.AutoscaleSpec{TargetUtilization: 0.5}, sample: func(par, _ int) autoscale.Sample { return steady(par, 1000, 500) },
			from: 1, to: 4, by: 2, reason: "needs 4 instances"},
		{name: "a load step is sized by the latest samples, not the window's average of before and after: 1 → 4 at once",
			par: 1, steps: 5, spec: fast, sample: func(par, k int) autoscale.Sample {
				if k < 3 {
					return steady(par, 100, 500)
				}
				return steady(par, 1400, 500) // ceil(1400/(500×0.7)) = 4; the window's average (750/s) says 3
			}, from: 1, to: 4, after: 5, by: 5, reason: "needs 4 instances"},
		{name: "one sample is not enough to scale", par: 1, steps: 1, spec: fast,
			sample: func(par, _ int) autoscale.Sample { return steady(par, 1000, 500) }, reason: "waiting for 2 samples"},
		{name: "never beyond max", par: 1, steps: 2, spec: core.AutoscaleSpec{Max: 2},
			sample: func(par, _ int) autoscale.Sample { return steady(par, 10_000, 500) }, from: 1, to: 2, by: 2},
		{name: "never beyond the key groups", par: 1, steps: 2, spec: fast,
			sample: func(par, _ int) autoscale.Sample { s := steady(par, 10_000, 500); s.KeyGroups = 4; return s }, from: 1, to: 4, by: 2},
		{name: "hysteresis: utilization 80% is within 20% of 70%", par: 2, steps: 50, spec: fast,
			sample: func(par, _ int) autoscale.Sample { return steady(par, 800, 500) }, reason: "within 20% of the target"},
		{name: "just outside the band scales", par: 2, steps: 2, spec: fast,
			sample: func(par, _ int) autoscale.Sample { return steady(par, 920, 500) }, from: 2, to: 3, by: 2},
		{name: "idle scales down to min only after the stabilisation window", par: 4, steps: 20, spec: core.AutoscaleSpec{Min: 2, ScaleDownAfter: 60 * time.Second},
			sample: func(par, _ int) autoscale.Sample { return steady(par, 0, 500) }, from: 4, to: 2, after: 13, by: 13, reason: "scaling down"},
		{name: "a down-scale waits for the window", par: 4, steps: 12, spec: core.AutoscaleSpec{ScaleDownAfter: 60 * time.Second},
			sample: func(par, _ int) autoscale.Sample { return steady(par, 100, 500) }, reason: "scaling down once fewer were recommended for 1m0s"},
		{name: "down to the most recommended in the window", par: 6, steps: 20, spec: core.AutoscaleSpec{ScaleDownAfter: 30 * time.Second},
			sample: func(par, k int) autoscale.Sample {
				if k%2 == 0 {
					return steady(par, 600, 500) // needs 2
				}
				return steady(par, 1000, 500) // needs 3
			}, from: 6, to: 3, after: 7, by: 8},
		{name: "a sample that does not say fewer restarts the window", par: 4, steps: 30, spec: core.AutoscaleSpec{ScaleDownAfter: 60 * time.Second},
			sample: func(par, k int) autoscale.Sample {
				if k >= 8 && k < 12 {
					return steady(par, 1400, 500) // 70%: stay, once the window holds only these
				}
				return steady(par, 100, 500)
			}, from: 4, to: 3, after: 20, by: 26}, // without the restart: at step 13, to 1
		{name: "above max: down to max", par: 8, steps: 20, spec: core.AutoscaleSpec{Max: 5, ScaleDownAfter: 30 * time.Second},
			sample: func(par, _ int) autoscale.Sample { return steady(par, 2800, 500) }, from: 8, to: 5, after: 7, by: 8, reason: "outside the bounds [1, 5]"},
		{name: "a hot instance is a skew, not a reason to scale out", par: 4, steps: 10, spec: fast,
			sample: func(par, _ int) autoscale.Sample {
				s := steady(par, 600, 500)
				for j := range s.Instances {
					s.Instances[j].Busy, s.Instances[j].Rate = 0.05, 20
				}
				s.Instances[2].Busy, s.Instances[2].Rate = 1, 540
				s.Rate, s.InputRate = 600, 2000
				return s
			}, reason: "instance 2 (key groups [128, 192)) is the hot spot"},
		{name: "input without a processed record: no true rate", par: 1, steps: 3, spec: fast,
			sample: func(par, _ int) autoscale.Sample {
				s := steady(par, 0, 500)
				s.InputRate = 100
				return s
			}, reason: "no true rate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := autoscale.New(autoscale.Config{})
			now := t0
			par := c.par
			var last autoscale.Decision
			var first *autoscale.Decision
			step := 0
			for k := 0; k < c.steps+2 && first == nil; k++ {
				now = now.Add(every)
				last = p.Decide(now, "op", c.spec, c.sample(par, k))
				if last.Scale {
					first, step = &last, k+1
				}
				if k+1 == c.steps && c.to == 0 {
					break
				}
			}
			if c.to == 0 {
				if first != nil {
					t.Fatalf("scaled at step %d: %v, want no change", step, first)
				}
			} else {
				if first == nil {
					t.Fatalf("no change after %d samples, want %d → %d; last: %v", c.steps+2, c.from, c.to, last)
				}
				if first.Current != c.from || first.Recommended != c.to || step > c.by || step < c.after {
					t.Fatalf("got %d → %d at step %d, want %d → %d at step %d to %d: %v", first.Current, first.Recommended, step, c.from, c.to, c.after, c.by, first)
				}
				last = *first
			}
			if !strings.Contains(last.Reason, c.reason) {
				t.Fatalf("reason %q, want it to say %q", last.Reason, c.reason)
			}
			if c.name == "a hot instance is a skew, not a reason to scale out" {
				// Skewed, with the hot instance's key groups, and counted
				// in the node demand as what it has (the hot group is one
				// instance's work), not the 2000/s the input asks.
				if !last.Skewed || last.Needed != last.Current || last.Inputs.HotGroups != [2]int{128, 192} ||
					autoscale.Demand(map[string]int{"op": 4}, map[string]autoscale.Decision{"op": last}) != 4 {
					t.Fatalf("skewed decision: %+v", last)
				}
				if !strings.Contains(last.Reason, "scaling out would not spread") || !strings.Contains(last.Reason, "per-instance busy time") {
					t.Fatalf("the reason does not say scaling out would not fix it, or how the skew was found: %q", last.Reason)
				}
			}
			if !last.Skewed && !last.Scale && last.Needed == 0 {
				t.Fatalf("decision without Needed: %+v", last)
			}
			if last.Inputs.Samples == 0 || last.Operator != "op" || last.At.IsZero() {
				t.Fatalf("decision lacks its inputs: %+v", last)
			}
		})
	}
}

// TestCoolDown: after a change, the next (however needed) waits for the
// cool-down.
func TestCoolDown(t *testing.T) {
	p := autoscale.New(autoscale.Config{})
	spec := core.AutoscaleSpec{CoolDown: 30 * time.Second}
	t0 := time.Unix(1_000_000, 0)
	p.Applied("op", 2, t0)
	for k := 1; ; k++ {
		now := t0.Add(time.Duration(k) * every)
		d := p.Decide(now, "op", spec, steady(2, 3000, 500))
		if now.Sub(t0) < 30*time.Second {
			if d.Scale || !strings.Contains(d.Reason, "cooling down") && !strings.Contains(d.Reason, "waiting for") {
				t.Fatalf("%v after the change: %v, want it cooling down", now.Sub(t0), d)
			}
			continue
		}
		if !d.Scale || d.Recommended != 9 {
			t.Fatalf("%v after the change (cool-down 30s): %v, want a scale to 9", now.Sub(t0), d)
		}
		return
	}
}

// TestNoFlappingUnderNoise: a demand jittering ±25% around a level the
// parallelism suits never scales; a step up scales once (up), and back
// down once after the window; no change in between.
func TestNoFlappingUnderNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noisy := func(level float64) float64 { return level * (0.75 + 0.5*rng.Float64()) }
	spec := core.AutoscaleSpec{CoolDown: 30 * time.Second, ScaleDownAfter: 2 * time.Minute}
	t0 := time.Unix(1_000_000, 0)

	t.Run("steady", func(t *testing.T) {
		p := autoscale.New(autoscale.Config{})
		changes, last, _ := run(p, t0, 3, 500, spec, func(par, _ int) autoscale.Sample { return steady(par, noisy(1050), 500) })
		if len(changes) != 0 {
			t.Fatalf("%d changes under noise, want 0: first %v", len(changes), changes[0])
		}
		if last.Inputs.Samples < 2 {
			t.Fatalf("window of %d samples", last.Inputs.Samples)
		}
	})
	t.Run("step up and down", func(t *testing.T) {
		p := autoscale.New(autoscale.Config{})
		level := func(k int) float64 {
			if k >= 100 && k < 300 {
				return 10_500 // ×10
			}
			return 1050
		}
		changes, _, end := run(p, t0, 3, 500, spec, func(par, k int) autoscale.Sample { return steady(par, noisy(level(k)), 500) })
		var ups, downs int
		for _, d := range changes {
			if d.Recommended > d.Current {
				ups++
			} else {
				downs++
			}
		}
		// The step is seen through a window averaging the old level in,
		// so the first up-scale may fall short and a second follow the
		// cool-down; never more, and never a change back and forth.
		if ups < 1 || ups > 2 || downs < 1 || downs > 2 || end != 3 && end != 4 {
			t.Fatalf("%d up, %d down, ending at %d, want 1–2 up, 1–2 down, back at 3 or 4: %v", ups, downs, end, changes)
		}
		for j := 1; j < len(changes); j++ {
			prevUp := changes[j-1].Recommended > changes[j-1].Current
			up := changes[j].Recommended > changes[j].Current
			if prevUp && !up && changes[j].At.Sub(changes[j-1].At) < spec.ScaleDownAfter {
				t.Fatalf("down %v after up, within the stabilisation window: %v", changes[j].At.Sub(changes[j-1].At), changes)
			}
			if !prevUp && up {
				t.Fatalf("up after down (flapping): %v", changes)
			}
		}
	})
}
