package bench

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/samples/nexmark"
	"github.com/sluicehq/sluice/sdk"
)

// NexmarkConfig sets up one run of Nexmark query 5 or 8 (samples/nexmark).
type NexmarkConfig struct {
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
func Q5(cfg NexmarkConfig) (Result, error) {
	want := map[string]string{}
	for end, h := range nexmark.Q5Expected(cfg.nexmark()) {
		want[strconv.FormatInt(end, 10)] = h.String()
	}
	return runNexmark("q5", cfg, nexmark.Q5, want, &answerSink{name: "q5-sink", stream: nexmark.Q5HotItems,
		decode: func(rec sdk.Record) (string, string, error) {
			end, h, err := nexmark.Q5Result(rec)
			return strconv.FormatInt(end.UnixNano(), 10), h.String(), err
		}})
}

// Q8 runs Nexmark query 8 as Q5 runs query 5, and checks that its answers
// are exactly nexmark.Q8Expected's.
func Q8(cfg NexmarkConfig) (Result, error) {
	want := map[string]string{}
	for _, u := range nexmark.Q8Expected(cfg.nexmark()) {
		want[fmt.Sprint(u.Person, u.Start.UnixNano())] = u.Name
	}
	return runNexmark("q8", cfg, nexmark.Q8, want, &answerSink{name: "q8-sink", stream: nexmark.Q8NewUsers,
		decode: func(rec sdk.Record) (string, string, error) {
			u, err := nexmark.Q8Result(rec)
			return fmt.Sprint(u.Person, u.Start.UnixNano()), u.Name, err
		}})
}

// nexmark returns the sample's configuration of a run.
func (cfg NexmarkConfig) nexmark() nexmark.Config {
	if cfg.Parallelism == 0 {
		cfg.Parallelism = 2
	}
	return nexmark.Config{Events: cfg.Events, Seed: 3, Parallelism: cfg.Parallelism}
}

// runNexmark runs a query's operators with sink and checks the sink's
// answers against want.
func runNexmark(query string, cfg NexmarkConfig, operators func(nexmark.Config) ([]sdk.Factory, error), want map[string]string, sink *answerSink) (Result, error) {
	fs, err := operators(cfg.nexmark())
	if err != nil {
		return Result{}, err
	}
	sink.got = map[string]string{}
	var first firstEvent
	fs[0] = observe(fs[0], &first, nil)
	fs = append(fs, func() sdk.Operator { return sink })
	end, cpu, err := runBounded(cfg.ExactlyOnce, sink.name, fs)
	if err != nil {
		return Result{}, fmt.Errorf("nexmark %s: %w (%d of %d answers)", query, err, sink.len(), len(want))
	}
	if err := sink.check(want); err != nil {
		return Result{}, fmt.Errorf("nexmark %s: %w", query, err)
	}
	start, cpu0, err := first.get()
	if err != nil {
		return Result{}, err
	}
	return Result{Ops: cfg.Events, Elapsed: end.Sub(start), CPU: cpu - cpu0}, nil
}

// answerSink keeps a query's answers, each decoded to a key (q5: the
// window end; q8: the person and window start) and an answer.
type answerSink struct {
	name, stream string
	decode       func(sdk.Record) (key, answer string, err error)
	mu           sync.Mutex
	got          map[string]string
	dups         int
}

func (s *answerSink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.name, Inputs: []sdk.Input{{Stream: s.stream}}}
}
func (s *answerSink) Init(sdk.Context) error { return nil }
func (s *answerSink) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	k, a, err := s.decode(rec)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.got[k]; ok {
		s.dups++
	}
	s.got[k] = a
	return nil
}
func (s *answerSink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

func (s *answerSink) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// check returns an error unless every answer is want's, once.
func (s *answerSink) check(want map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	wrong := 0
	for k, a := range want {
		if got, ok := s.got[k]; !ok || got != a {
			wrong++
		}
	}
	if s.dups > 0 || wrong > 0 || len(s.got) != len(want) {
		return fmt.Errorf("%w: %d answers (%d duplicates, %d wrong or missing), want %d", errWrongOutput, len(s.got), s.dups, wrong, len(want))
	}
	return nil
}
