package nexmark

import (
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// Sink is a sink operator keeping a query's answers in memory, for tests
// and benchmarks: one instance reading the query's Output. It keeps a
// copy of each record and decodes them all in Answers, so that decoding
// and formatting answers costs a benchmark's run nothing (as Flink's
// nexmark runs write to a blackhole sink). It is safe for concurrent
// use; Answers may be called while it runs.
type Sink struct {
	q    Query
	mu   sync.Mutex
	recs []sdk.Record
}

var _ sdk.Operator = (*Sink)(nil)

// NewSink returns a Sink of q's answers, named "<query>-sink".
func (q Query) NewSink() *Sink { return &Sink{q: q} }

// Name returns the sink's operator name.
func (s *Sink) Name() string { return s.q.Name + "-sink" }

// Factory returns a factory of s itself (one instance).
func (s *Sink) Factory() sdk.Factory { return func() sdk.Operator { return s } }

// Answers decodes the answers so far.
func (s *Sink) Answers() ([]Answer, error) {
	s.mu.Lock()
	recs := s.recs[:len(s.recs):len(s.recs)]
	s.mu.Unlock()
	out := make([]Answer, len(recs))
	for i, rec := range recs {
		a, err := s.q.Answer(rec)
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// Len returns the number of answers so far.
func (s *Sink) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.recs)
}

// Metadata implements sdk.Operator.
func (s *Sink) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.Name(), Inputs: []sdk.Input{{Stream: s.q.Output}}}
}

// Init implements sdk.Operator.
func (s *Sink) Init(sdk.Context) error { return nil }

// ProcessRecord implements sdk.Operator: it keeps a copy of rec (its
// key, value and headers).
func (s *Sink) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	kept := sdk.Record{Key: slices.Clone(rec.Key), Value: slices.Clone(rec.Value), Headers: slices.Clone(rec.Headers), EventTime: rec.EventTime}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, kept)
	return nil
}

// ProcessTimer implements sdk.Operator.
func (s *Sink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
