package nexmark

import (
	"sync"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// Sink is a sink operator keeping a query's answers in memory, for tests
// and benchmarks: one instance reading the query's Output. It is safe
// for concurrent use; Answers may be called while it runs.
type Sink struct {
	q   Query
	mu  sync.Mutex
	got []Answer
}

var _ sdk.Operator = (*Sink)(nil)

// NewSink returns a Sink of q's answers, named "<query>-sink".
func (q Query) NewSink() *Sink { return &Sink{q: q} }

// Name returns the sink's operator name.
func (s *Sink) Name() string { return s.q.Name + "-sink" }

// Factory returns a factory of s itself (one instance).
func (s *Sink) Factory() sdk.Factory { return func() sdk.Operator { return s } }

// Answers returns a copy of the answers so far.
func (s *Sink) Answers() []Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Answer(nil), s.got...)
}

// Len returns the number of answers so far.
func (s *Sink) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// Metadata implements sdk.Operator.
func (s *Sink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.Name(), Inputs: []sdk.Input{{Stream: s.q.Output}}}
}

// Init implements sdk.Operator.
func (s *Sink) Init(sdk.Context) error { return nil }

// ProcessRecord implements sdk.Operator: it decodes the answer.
func (s *Sink) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	a, err := s.q.Answer(rec)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, a)
	return nil
}

// ProcessTimer implements sdk.Operator.
func (s *Sink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
