package bench

import (
	"slices"
	"time"
)

// Result is one run of a scenario.
type Result struct {
	// Ops is the number of messages or records the run moved.
	Ops int64
	// Elapsed is the run's wall time.
	Elapsed time.Duration
	// CPU is the process's CPU time (user and system) over Elapsed, if
	// measured.
	CPU time.Duration
	// Latencies are per-record end-to-end latencies, if measured.
	Latencies []time.Duration
	// Checkpoints are the durations of the run's complete checkpoints,
	// if it ran exactly-once.
	Checkpoints []time.Duration
	// CheckpointPhases are the phases of those that recorded them.
	CheckpointPhases []CheckpointPhases
	// P99 is a 99th percentile measured elsewhere than in Latencies (a
	// node process's histograms), if any.
	P99 time.Duration
	// StateBytes is the size of the run's data directory at its end, if
	// measured.
	StateBytes int64
	// SideCPU is, for a run between two processes, the CPU time over
	// Elapsed of the sending side ([0]) and of the receiving side ([1]),
	// if measured.
	SideCPU [2]time.Duration
	// Blocked is, for a run between node processes, the time over Elapsed
	// the sending side's instances spent blocked by backpressure, if
	// measured.
	Blocked time.Duration
}

// SideCPUPerOp returns SideCPU[i] per op, in µs (0 if not measured).
func (r Result) SideCPUPerOp(i int) float64 {
	if r.Ops <= 0 {
		return 0
	}
	return float64(r.SideCPU[i]) / 1e3 / float64(r.Ops)
}

// PerSec returns Ops per second.
func (r Result) PerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// Percentile returns the p-th percentile (0–100) of the latencies, or 0.
func (r Result) Percentile(p float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	l := slices.Clone(r.Latencies)
	slices.Sort(l)
	i := int(float64(len(l)-1) * p / 100)
	return l[i]
}

// Median returns the median of xs (the mean of the middle two for even n).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
