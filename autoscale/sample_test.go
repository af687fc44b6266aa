package autoscale_test

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/autoscale"
)

// counters returns an operator's counters with one instance per entry
// of processed (produced the same), busy and blocked.
func counters(name string, inputs, outputs []string, epoch int64, node string, processed []int64, busy, blocked []time.Duration, queued int64) autoscale.OperatorCounters {
	op := autoscale.OperatorCounters{Name: name, Parallelism: len(processed), KeyGroups: 256, Epoch: epoch, Inputs: inputs, Outputs: outputs}
	for j := range processed {
		op.Instances = append(op.Instances, autoscale.InstanceCounters{Node: node, Index: j, Epoch: epoch, Running: true,
			Processed: processed[j], Produced: processed[j], Busy: busy[j], Blocked: blocked[j], Queued: queued})
	}
	return op
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*max(1, math.Abs(b)) }

// TestSamples: rates and fractions over the interval; the demand on an
// operator whose source is blocked 80% of the time is 5× what it took,
// plus its mailboxes' growth; a layout change or a move to another node
// leaves the operator out.
func TestSamples(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	s := time.Second
	prev := autoscale.Snapshot{At: t0, Operators: []autoscale.OperatorCounters{
		counters("gen", nil, []string{"words"}, 0, "a", []int64{0}, []time.Duration{0}, []time.Duration{0}, 0),
		counters("count", []string{"words"}, []string{"counts"}, 0, "a", []int64{0, 0}, []time.Duration{0, 0}, []time.Duration{0, 0}, 100),
		counters("sink", []string{"counts"}, nil, 0, "a", []int64{0}, []time.Duration{0}, []time.Duration{0}, 0),
		counters("moved", []string{"counts"}, nil, 0, "a", []int64{0}, []time.Duration{0}, []time.Duration{0}, 0),
		counters("rescaled", []string{"counts"}, nil, 1, "a", []int64{0}, []time.Duration{0}, []time.Duration{0}, 0),
	}}
	cur := autoscale.Snapshot{At: t0.Add(10 * s), Operators: []autoscale.OperatorCounters{
		counters("gen", nil, []string{"words"}, 0, "a", []int64{10_000}, []time.Duration{s}, []time.Duration{8 * s}, 0),
		counters("count", []string{"words"}, []string{"counts"}, 0, "a", []int64{4000, 6000}, []time.Duration{10 * s, 5 * s}, []time.Duration{0, 0}, 300),
		counters("sink", []string{"counts"}, nil, 0, "a", []int64{10_000}, []time.Duration{2 * s}, []time.Duration{0}, 0),
		counters("moved", []string{"counts"}, nil, 0, "b", []int64{10_000}, []time.Duration{2 * s}, []time.Duration{0}, 0),
		counters("rescaled", []string{"counts"}, nil, 2, "a", []int64{10_000, 0}, []time.Duration{2 * s, 0}, []time.Duration{0, 0}, 0),
	}}
	got := autoscale.Samples(prev, cur)
	if _, ok := got["moved"]; ok {
		t.Errorf("an instance now on another node was compared with its old node's counters: %+v", got["moved"])
	}
	if _, ok := got["rescaled"]; ok {
		t.Errorf("an operator whose layout changed was sampled: %+v", got["rescaled"])
	}
	gen, count, sink := got["gen"], got["count"], got["sink"]
	if !near(gen.Rate, 1000) || !near(gen.InputRate, 1000) || !near(gen.Instances[0].Blocked, 0.8) {
		t.Errorf("gen: %+v, want rate and input 1000/s, blocked 0.8", gen)
	}
	// count took 1000/s, its mailboxes grew by 2×200 records in 10 s
	// (40/s), and gen, blocked 80%, would give it 5× as much.
	if !near(count.Rate, 1000) || !near(count.InputRate, 5*1040) {
		t.Errorf("count: rate %v, input %v, want 1000 and %v", count.Rate, count.InputRate, 5*1040)
	}
	if len(count.Instances) != 2 || !near(count.Instances[0].Busy, 1) || !near(count.Instances[1].Busy, 0.5) || count.Instances[1].Queued != 300 {
		t.Errorf("count's instances: %+v, want busy 1 and 0.5, 300 queued", count.Instances)
	}
	// count is not blocked: sink's demand is corrected by gen's factor
	// only, compounded through count.
	if !near(sink.InputRate, 5000) {
		t.Errorf("sink's demand %v, want 5000 (1000/s × 5)", sink.InputRate)
	}
	if got := autoscale.Samples(cur, cur); got != nil {
		t.Errorf("an empty interval gave samples: %v", got)
	}
}
