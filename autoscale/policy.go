package autoscale

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/internal/core"
)

// Config tunes the Policy; zero fields take DefaultConfig's.
type Config struct {
	// Window is how long samples are averaged over.
	Window time.Duration
	// MinSamples is the fewest samples (since the last change) a decision
	// to scale needs.
	MinSamples int
	// Band is the hysteresis: no change while the utilization at the
	// current parallelism is within Band of the target utilization.
	Band float64
	// SkewBusy and SkewIdle define a hot spot: one instance busy at least
	// SkewBusy while the others average at most SkewIdle.
	SkewBusy, SkewIdle float64
}

// DefaultConfig returns the defaults: a 15 s window, 2 samples, a band of
// ±0.2 around the target, a hot spot busy 80% with the others at most
// 30%.
func DefaultConfig() Config {
	return Config{Window: 15 * time.Second, MinSamples: 2, Band: 0.2, SkewBusy: 0.8, SkewIdle: 0.3}
}

// withDefaults fills c's zero fields.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.Window, c.MinSamples, c.Band = cmp.Or(c.Window, d.Window), cmp.Or(c.MinSamples, d.MinSamples), cmp.Or(c.Band, d.Band)
	c.SkewBusy, c.SkewIdle = cmp.Or(c.SkewBusy, d.SkewBusy), cmp.Or(c.SkewIdle, d.SkewIdle)
	return c
}

// Inputs are what a Decision was computed from: averages over the
// window's samples.
type Inputs struct {
	// Samples and Window say how many samples over how long.
	Samples int           `json:"samples"`
	Window  time.Duration `json:"window"`
	// InputRate is the demand on the operator's input and Rate what it
	// took, records/s.
	InputRate float64 `json:"inputRate"`
	Rate      float64 `json:"rate"`
	// TrueRate is the records/s one instance takes while busy (Rate ÷
	// busy time).
	TrueRate float64 `json:"trueRate"`
	// Busy and Blocked are the instances' mean fractions of time working
	// and blocked by backpressure.
	Busy    float64 `json:"busy"`
	Blocked float64 `json:"blocked"`
	// Utilization is the busy fraction the demand needs of the current
	// instances (InputRate ÷ (TrueRate × parallelism)).
	Utilization float64 `json:"utilization"`
	// Queued is the records in the instances' mailboxes (latest sample).
	Queued int64 `json:"queued"`
	// HotInstance is the busiest instance's index and HotBusy its busy
	// fraction (latest sample); OthersBusy the others' mean.
	HotInstance int     `json:"hotInstance"`
	HotGroups   [2]int  `json:"hotGroups"`
	HotBusy     float64 `json:"hotBusy"`
	OthersBusy  float64 `json:"othersBusy"`
}

// Decision is the Policy's answer for one operator.
type Decision struct {
	Operator string    `json:"operator"`
	At       time.Time `json:"at"`
	// Current is the parallelism now; Recommended what the operator
	// needs (Current when no change is due).
	Current     int `json:"current"`
	Recommended int `json:"recommended"`
	// Needed is the instances the demand needs within the bounds, before
	// the cool-down and the stabilisation window have their say: what the
	// operator counts for in the cluster's node demand (Demand). A skewed
	// operator needs no more than Current: its hot key group is one
	// instance's work.
	Needed int `json:"needed"`
	// Scale says the change to Recommended is due now (an up-scale, or a
	// down-scale through its stabilisation window, out of cool-down).
	Scale bool `json:"scale"`
	// Skewed says one instance is the hot spot (busy while the others
	// idle): scaling out would not spread its load.
	Skewed bool `json:"skewed,omitempty"`
	// Reason says why, for people.
	Reason string `json:"reason"`
	Inputs Inputs `json:"inputs"`
}

// String describes d in one line: the change (or none), why, and the
// inputs.
func (d Decision) String() string {
	in := d.Inputs
	change := fmt.Sprintf("stay at %d", d.Current)
	if d.Scale {
		change = fmt.Sprintf("scale %d → %d", d.Current, d.Recommended)
	} else if d.Recommended != d.Current {
		change = fmt.Sprintf("recommend %d (now %d)", d.Recommended, d.Current)
	}
	return fmt.Sprintf("%s: %s: %s (input %.0f/s, took %.0f/s, true rate %.0f/s per instance, busy %.0f%%, blocked %.0f%%, utilization %.0f%%, queued %d; %d samples over %v)",
		d.Operator, change, d.Reason, in.InputRate, in.Rate, in.TrueRate, 100*in.Busy, 100*in.Blocked, 100*in.Utilization, in.Queued,
		in.Samples, in.Window.Round(time.Second))
}

// Policy decides each operator's parallelism from its samples. It keeps,
// per operator, the samples of the window since the last change, when
// that change was and the down-scale recommendations being stabilised.
// Not safe for concurrent use: one controller owns it.
type Policy struct {
	cfg Config
	ops map[string]*opState
}

// opState is one operator's history.
type opState struct {
	parallelism int
	samples     []timed
	lastChange  time.Time // zero: none seen
	downSince   time.Time // zero: no down-scale being stabilised
	downMax     int       // the most instances recommended since downSince
}

// timed is a sample and when it was taken.
type timed struct {
	at time.Time
	s  Sample
}

// New returns a Policy with cfg (zero fields from DefaultConfig).
func New(cfg Config) *Policy {
	return &Policy{cfg: cfg.withDefaults(), ops: map[string]*opState{}}
}

// Applied tells the policy that op's parallelism was changed to
// parallelism at now (by the controller or anyone): its window starts
// over and so does the cool-down.
func (p *Policy) Applied(op string, parallelism int, now time.Time) {
	st := p.state(op)
	st.parallelism, st.samples, st.lastChange = parallelism, nil, now
	st.settle()
}

// Forget drops op's history (it was killed, or autoscaling turned off).
func (p *Policy) Forget(op string) { delete(p.ops, op) }

// state returns op's history, creating it.
func (p *Policy) state(op string) *opState {
	st := p.ops[op]
	if st == nil {
		st = &opState{}
		p.ops[op] = st
	}
	return st
}

// Decide adds s, op's sample taken at now, and returns the decision for
// op under spec (defaults applied here). A sample whose parallelism
// differs from the last one's counts as a change made at now.
func (p *Policy) Decide(now time.Time, op string, spec core.AutoscaleSpec, s Sample) Decision {
	st := p.state(op)
	if st.parallelism != s.Parallelism {
		if st.parallelism != 0 {
			p.Applied(op, s.Parallelism, now)
		}
		st.parallelism = s.Parallelism
	}
	st.samples = append(st.samples, timed{now, s})
	for len(st.samples) > 1 && now.Sub(st.samples[0].at) > p.cfg.Window {
		st.samples = st.samples[1:]
	}
	spec = spec.WithDefaults(s.KeyGroups)
	hi := min(spec.Max, max(s.KeyGroups, 1))
	lo := min(spec.Min, hi)
	d := Decision{Operator: op, At: now, Current: s.Parallelism, Recommended: s.Parallelism, Needed: s.Parallelism, Inputs: p.inputs(st)}
	in := &d.Inputs
	needed := lo
	switch {
	case in.InputRate > 0 && in.TrueRate > 0:
		needed = int(math.Ceil(in.InputRate / (in.TrueRate * spec.TargetUtilization)))
	case in.InputRate > 0:
		// Records arrive but none was processed: nothing to size by.
		d.Reason = "input arrives but nothing was processed yet: no true rate to size by"
		st.settle()
		return d
	}
	needed = min(max(needed, lo), hi)
	bounded := s.Parallelism < lo || s.Parallelism > hi
	if !bounded && math.Abs(in.Utilization-spec.TargetUtilization) <= p.cfg.Band {
		d.Reason = fmt.Sprintf("utilization %.0f%% is within %.0f%% of the target %.0f%%", 100*in.Utilization, 100*p.cfg.Band, 100*spec.TargetUtilization)
		st.settle()
		return d
	}
	if needed == s.Parallelism {
		d.Reason = fmt.Sprintf("%d instances is what the demand needs within the bounds [%d, %d]", needed, lo, hi)
		st.settle()
		return d
	}
	if needed > s.Parallelism && in.TrueRate > 0 {
		// Up-scales are sized by the latest samples' demand: the window's
		// average still holds samples from before a load step and would
		// take a change per window to get there (1 → 2 → 3 → 4, seen live).
		needed = max(needed, min(hi, int(math.Ceil(recentDemand(st, p.cfg.MinSamples)/(in.TrueRate*spec.TargetUtilization)))))
	}
	if needed > s.Parallelism && s.Parallelism > 1 && in.HotBusy >= p.cfg.SkewBusy && in.OthersBusy <= p.cfg.SkewIdle {
		d.Skewed = true
		d.Reason = fmt.Sprintf("instance %d (key groups [%d, %d)) is the hot spot, busy %.0f%% while the others average %.0f%% (from per-instance busy time; "+
			"the runtime does not count per key group): a hot key group, one instance's work however many there are, which scaling out would not spread; "+
			"not scaling up, and counting it as one instance of demand",
			in.HotInstance, in.HotGroups[0], in.HotGroups[1], 100*in.HotBusy, 100*in.OthersBusy)
		st.settle()
		return d
	}
	d.Recommended, d.Needed = needed, needed
	if needed < s.Parallelism {
		if st.downSince.IsZero() {
			st.downSince, st.downMax = now, needed
		}
		st.downMax = max(st.downMax, needed)
		d.Recommended = st.downMax
	} else {
		st.settle()
	}
	direction := "up"
	if d.Recommended < s.Parallelism {
		direction = "down"
	}
	why := fmt.Sprintf("the demand needs %d instances at %.0f%% utilization (now %.0f%%)", needed, 100*spec.TargetUtilization, 100*in.Utilization)
	if bounded {
		why = fmt.Sprintf("%d instances is outside the bounds [%d, %d]", s.Parallelism, lo, hi)
	}
	cooled := st.lastChange.IsZero() || now.Sub(st.lastChange) >= spec.CoolDown
	switch {
	case in.Samples < p.cfg.MinSamples:
		d.Reason = fmt.Sprintf("%s; waiting for %d samples since the last change (have %d)", why, p.cfg.MinSamples, in.Samples)
	case !cooled:
		d.Reason = fmt.Sprintf("%s; cooling down until %v after the last change", why, spec.CoolDown)
	case direction == "down" && now.Sub(st.downSince) < spec.ScaleDownAfter:
		d.Reason = fmt.Sprintf("%s; scaling down once fewer were recommended for %v (for %v so far)", why, spec.ScaleDownAfter, now.Sub(st.downSince).Round(time.Second))
	default:
		d.Scale = true
		d.Reason = fmt.Sprintf("%s: scaling %s", why, direction)
		if direction == "down" {
			d.Reason = fmt.Sprintf("%s, recommended for %v: scaling down to the most of those recommendations", why, now.Sub(st.downSince).Round(time.Second))
		}
	}
	return d
}

// recentDemand is the least input rate of st's latest n samples (all of
// them when fewer): the demand they all agree on, so one noisy sample does
// not size an up-scale.
func recentDemand(st *opState, n int) float64 {
	latest := st.samples[max(0, len(st.samples)-n):]
	d := latest[0].s.InputRate
	for _, t := range latest[1:] {
		d = min(d, t.s.InputRate)
	}
	return d
}

// settle ends the stabilisation of a down-scale: a recommendation that
// did not say fewer came in.
func (st *opState) settle() { st.downSince, st.downMax = time.Time{}, 0 }

// inputs averages st's window of samples.
func (p *Policy) inputs(st *opState) Inputs {
	var in Inputs
	var secs, processed, busySecs, blockedSecs, instSecs float64
	for _, t := range st.samples {
		sec := t.s.Interval.Seconds()
		secs += sec
		in.InputRate += t.s.InputRate * sec
		processed += t.s.Rate * sec
		for _, x := range t.s.Instances {
			busySecs += x.Busy * sec
			blockedSecs += x.Blocked * sec
			instSecs += sec
		}
	}
	in.Samples = len(st.samples)
	if in.Samples > 0 {
		in.Window = st.samples[in.Samples-1].at.Sub(st.samples[0].at) + st.samples[0].s.Interval
	}
	if secs == 0 {
		return in
	}
	in.InputRate /= secs
	in.Rate = processed / secs
	if busySecs > 0 {
		in.TrueRate = processed / busySecs
	}
	if instSecs > 0 {
		in.Busy, in.Blocked = busySecs/instSecs, blockedSecs/instSecs
	}
	if in.TrueRate > 0 && st.parallelism > 0 {
		in.Utilization = in.InputRate / (in.TrueRate * float64(st.parallelism))
	}
	last := st.samples[len(st.samples)-1].s
	hot, others := -1, 0.0
	for j, x := range last.Instances {
		in.Queued += x.Queued
		if hot < 0 || x.Busy > last.Instances[hot].Busy {
			hot = j
		}
	}
	if hot >= 0 {
		h := last.Instances[hot]
		in.HotInstance, in.HotGroups, in.HotBusy = h.Index, [2]int{h.FirstGroup, h.EndGroup}, h.Busy
		for j, x := range last.Instances {
			if j != hot {
				others += x.Busy
			}
		}
		if n := len(last.Instances) - 1; n > 0 {
			in.OthersBusy = others / float64(n)
		}
	}
	return in
}
