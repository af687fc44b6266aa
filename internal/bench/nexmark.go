package bench

import (
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/samples/nexmark"
	"github.com/sluicehq/sluice/sdk"
)

// Q5Config sets up one run of Nexmark query 5 (samples/nexmark).
type Q5Config struct {
	// Events is the number of events generated (a bounded stream).
	Events int64
	// Parallelism of every stage; 0 means 2.
	Parallelism int
	// ExactlyOnce runs with checkpoints every second to a directory
	// store; otherwise the run has no guarantee.
	ExactlyOnce bool
}

// Q5 runs Nexmark query 5 over a bounded stream of cfg.Events events,
// unthrottled, and checks that every window's answer is exactly
// nexmark.Q5Expected's. The time (and the process's CPU time) runs from
// the first event generated to the sink having finished.
func Q5(cfg Q5Config) (Result, error) {
	if cfg.Parallelism == 0 {
		cfg.Parallelism = 2
	}
	ncfg := nexmark.Config{Events: cfg.Events, Seed: 3, Parallelism: cfg.Parallelism}
	want := nexmark.Q5Expected(ncfg)
	fs, err := nexmark.Q5(ncfg)
	if err != nil {
		return Result{}, err
	}
	var first firstEvent
	fs[0] = observe(fs[0], &first, nil)
	sink := &q5Sink{got: map[int64]string{}}
	fs = append(fs, func() sdk.Operator { return sink })
	end, cpu, err := runBounded(cfg.ExactlyOnce, q5SinkName, fs)
	if err != nil {
		return Result{}, fmt.Errorf("nexmark q5: %w (%d of %d windows)", err, sink.len(), len(want))
	}
	if err := sink.check(want); err != nil {
		return Result{}, err
	}
	start, cpu0, err := first.get()
	if err != nil {
		return Result{}, err
	}
	return Result{Ops: cfg.Events, Elapsed: end.Sub(start), CPU: cpu - cpu0}, nil
}

const q5SinkName = "q5-sink"

// q5Sink keeps each window's answer.
type q5Sink struct {
	mu   sync.Mutex
	got  map[int64]string // window end (Unix ns) → answer
	dups int
}

func (s *q5Sink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: q5SinkName, Inputs: []sdk.Input{{Stream: nexmark.Q5HotItems}}}
}
func (s *q5Sink) Init(sdk.Context) error { return nil }
func (s *q5Sink) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	end, h, err := nexmark.Q5Result(rec)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.got[end.UnixNano()]; ok {
		s.dups++
	}
	s.got[end.UnixNano()] = h.String()
	return nil
}
func (s *q5Sink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

func (s *q5Sink) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// check returns an error unless every window's answer is want's, once.
func (s *q5Sink) check(want map[int64]nexmark.Hot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	wrong := 0
	for end, h := range want {
		if s.got[end] != h.String() {
			wrong++
		}
	}
	if s.dups > 0 || wrong > 0 || len(s.got) != len(want) {
		return fmt.Errorf("nexmark q5: %w: %d windows (%d duplicates, %d wrong or missing), want %d", errWrongOutput, len(s.got), s.dups, wrong, len(want))
	}
	return nil
}
