package autoscale

import (
	"slices"
	"time"
)

// InstanceCounters are one instance's counters at one time, as its node
// reports them (status.InstanceStatus). Busy and Blocked count from the
// instance's start on that node, so they are compared only with the same
// node's.
type InstanceCounters struct {
	Node                 string
	Index                int
	Epoch                int64
	FirstGroup, EndGroup int
	// Running says the instance processes input (not awaiting its state,
	// released, restarting or failed).
	Running             bool
	Processed, Produced int64
	Busy, Blocked       time.Duration
	Queued              int64
}

// OperatorCounters are one operator's counters at one time.
type OperatorCounters struct {
	Name        string
	Parallelism int
	KeyGroups   int
	Epoch       int64
	// Inputs and Outputs name the streams it reads and writes.
	Inputs, Outputs []string
	Instances       []InstanceCounters
}

// Snapshot is the cluster's counters at one time.
type Snapshot struct {
	At        time.Time
	Operators []OperatorCounters
}

// InstanceSample is one instance's measurements over an interval.
type InstanceSample struct {
	Index                int
	FirstGroup, EndGroup int
	// Rate is records/s taken from its inputs (a source's: produced).
	Rate float64
	// Busy and Blocked are the fractions (0–1) of the interval it spent
	// working and blocked by backpressure.
	Busy, Blocked float64
	// Queued is its mailbox depth at the interval's end, in records.
	Queued int64
}

// Sample is one operator's measurements over an interval.
type Sample struct {
	Interval    time.Duration
	Parallelism int
	KeyGroups   int
	// Rate is the records/s its instances took (a source's: produced).
	Rate float64
	// InputRate is the demand on its input, records/s: Rate, corrected by
	// its upstream's backpressure and its mailboxes' growth.
	InputRate float64
	Instances []InstanceSample
}

// maxCorrection bounds the factor by which a blocked upstream's demand is
// taken to exceed what it produced: 10, an upstream blocked 90% of the
// time. More would trust a few milliseconds of unblocked time too far; a
// bottleneck far behind is scaled up again after the cool-down.
const maxCorrection = 10

// instKey identifies an instance on one node.
type instKey struct {
	node  string
	epoch int64
	index int
}

// observed is one operator's measured interval before the demand is
// worked out.
type observed struct {
	op      OperatorCounters
	sample  Sample
	blocked float64 // mean blocked fraction of its instances
	inRate  float64 // records/s arriving: taken plus the mailboxes' growth
}

// Samples derives each operator's Sample over the interval from prev to
// cur. An operator is left out when its layout (epoch or parallelism)
// changed in between, or none of its running instances is in both
// snapshots on the same node: its counters are not comparable.
func Samples(prev, cur Snapshot) map[string]Sample {
	interval := cur.At.Sub(prev.At)
	if interval <= 0 {
		return nil
	}
	before := map[string]OperatorCounters{}
	for _, op := range prev.Operators {
		before[op.Name] = op
	}
	obs := map[string]*observed{}
	for _, op := range cur.Operators {
		p, ok := before[op.Name]
		if !ok || p.Epoch != op.Epoch || p.Parallelism != op.Parallelism {
			continue
		}
		if o := observe(p, op, interval); o != nil {
			obs[op.Name] = o
		}
	}
	writers := map[string][]string{} // stream → operators writing it
	for _, op := range cur.Operators {
		for _, s := range op.Outputs {
			writers[s] = append(writers[s], op.Name)
		}
	}
	factors := map[string]float64{}
	out := make(map[string]Sample, len(obs))
	for name, o := range obs {
		s := o.sample
		s.InputRate = max(0, o.inRate) * inputFactor(name, obs, writers, factors, map[string]bool{})
		out[name] = s
	}
	return out
}

// observe measures op's current-epoch instances present, running, in
// both p and c; nil when there are none.
func observe(p, c OperatorCounters, interval time.Duration) *observed {
	was := map[instKey]InstanceCounters{}
	for _, in := range p.Instances {
		was[instKey{in.Node, in.Epoch, in.Index}] = in
	}
	secs := interval.Seconds()
	o := &observed{op: c, sample: Sample{Interval: interval, Parallelism: c.Parallelism, KeyGroups: c.KeyGroups}}
	source := len(c.Inputs) == 0
	for _, in := range c.Instances {
		w, ok := was[instKey{in.Node, in.Epoch, in.Index}]
		if !ok || in.Epoch != c.Epoch || !in.Running || !w.Running {
			continue
		}
		took := in.Processed - w.Processed
		if source {
			took = in.Produced - w.Produced
		}
		s := InstanceSample{Index: in.Index, FirstGroup: in.FirstGroup, EndGroup: in.EndGroup,
			Rate:    float64(max(0, took)) / secs,
			Busy:    clamp01((in.Busy - w.Busy).Seconds() / secs),
			Blocked: clamp01((in.Blocked - w.Blocked).Seconds() / secs),
			Queued:  in.Queued}
		o.sample.Instances = append(o.sample.Instances, s)
		o.sample.Rate += s.Rate
		o.blocked += s.Blocked
		o.inRate += s.Rate + float64(in.Queued-w.Queued)/secs
	}
	if len(o.sample.Instances) == 0 {
		return nil
	}
	o.blocked /= float64(len(o.sample.Instances))
	slices.SortFunc(o.sample.Instances, func(a, b InstanceSample) int { return a.Index - b.Index })
	return o
}

// inputFactor is how much more than it takes an operator would be given
// if nothing downstream of its upstreams held them back: 1 for a source,
// else the most of its upstreams' output factors (see outputFactor).
func inputFactor(name string, obs map[string]*observed, writers map[string][]string, memo map[string]float64, visiting map[string]bool) float64 {
	o := obs[name]
	if o == nil || len(o.op.Inputs) == 0 || visiting[name] {
		return 1
	}
	if f, ok := memo[name]; ok {
		return f
	}
	visiting[name] = true
	f := 1.0
	for _, s := range o.op.Inputs {
		for _, u := range writers[s] {
			if uo := obs[u]; uo != nil && u != name {
				f = max(f, inputFactor(u, obs, writers, memo, visiting)/max(1-uo.blocked, 1.0/maxCorrection))
			}
		}
	}
	delete(visiting, name)
	f = min(f, maxCorrection)
	memo[name] = f
	return f
}

// clamp01 bounds f to [0, 1].
func clamp01(f float64) float64 { return min(1, max(0, f)) }
