// Package generate provides a rate-limited generator source for demos,
// tests and benchmarks.
//
// A Source calls Make for record numbers 0, 1, 2, … and produces the
// results to Stream, at most Rate records per second per instance. With
// several instances, instance j generates the numbers ≡ j (mod
// parallelism). Each instance stores its position (the next record
// number, "generate/next" → decimal) in its state, written in the same
// attempt (Poll) as the records it covers, so a restarted source
// continues where it stopped rather than starting over.
//
// What each guarantee means for it: under exactly-once the source is
// sdk.Resumable: the runtime restores the position of the last completed
// checkpoint and the source generates again exactly the record numbers
// that followed it (records made with rng may differ in what Make draws:
// rng is seeded from the instance and its position when the instance
// starts). Under at-least-once and none it is not replayable: a crash
// loses or repeats what was in flight, as with any source that is not
// sdk.Replayable. Changing Parallelism changes which numbers an instance
// generates, so a rescaled source does not continue the same sequence.
package generate

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// Source is a generator operator. Set the exported fields and pass
// func() sdk.Operator { return &generate.Source{…} } to the runtime.
type Source struct {
	// Name is the operator name.
	Name string
	// Stream is the output stream.
	Stream string
	// Make builds record number i; rng is the instance's random source.
	Make func(i int64, rng *rand.Rand) sdk.Record
	// Rate limits records per second per instance; 0 means unlimited.
	Rate float64
	// Pace, when set, is read at every Poll in place of Rate: a rate that
	// changes while the source runs (load steps in tests and benchmarks).
	// A new rate is counted from the Poll that sees it; a rate of 0 from
	// Pace means none is produced (not unlimited).
	Pace func() float64
	// Count stops the source after this many records in total; 0 means
	// never stop.
	Count int64
	// Parallelism is the number of instances; 0 means 1.
	Parallelism int
	// Batch is the most records produced per Poll; 0 means 1024.
	Batch int
	// Watermarks is the source's watermark strategy (see
	// sdk.WatermarkStrategy); nil means none.
	Watermarks *sdk.WatermarkStrategy
	// End makes the source finish once it has produced its share of
	// Count: Poll then returns sdk.ErrEndOfStream, so end-of-stream flows
	// downstream. Without it a source that reached Count idles.
	End bool

	next    int64 // next record number of this instance
	step    int64
	started time.Time
	sent    int64   // records produced since started, for the rate limit
	paced   float64 // the rate Pace returned last
	rng     *rand.Rand
}

var _ sdk.Resumable = (*Source)(nil)

// positionKey is the state key holding the next record number.
var positionKey = []byte("generate/next")

// Metadata implements sdk.Operator.
func (s *Source) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.Name, Outputs: []string{s.Stream}, Parallelism: s.Parallelism, Watermarks: s.Watermarks}
}

// ResumesFromState implements sdk.Resumable: after Init, Poll continues
// from the position in State, which it writes in the same attempt as the
// records it produces.
func (s *Source) ResumesFromState() {}

// Init restores the position.
func (s *Source) Init(ctx sdk.Context) error {
	if s.Make == nil {
		return fmt.Errorf("generate %q: Make is nil", s.Name)
	}
	info := ctx.Instance()
	s.step = int64(info.Parallelism)
	s.next = int64(info.Index)
	v, err := ctx.State().Get(positionKey)
	switch {
	case err == nil:
		if s.next, err = strconv.ParseInt(string(v), 10, 64); err != nil {
			return fmt.Errorf("generate %q: bad stored position %q: %w", s.Name, v, err)
		}
	case err != sdk.ErrNotFound:
		return err
	}
	s.started, s.sent = time.Now(), 0
	s.rng = rand.New(rand.NewPCG(uint64(info.Index)+1, uint64(s.next)))
	return nil
}

// Poll produces up to Batch records, fewer when the rate limit says so.
func (s *Source) Poll(ctx sdk.Context) error {
	n := int64(s.Batch)
	if n == 0 {
		n = 1024
	}
	rate := s.Rate
	if s.Pace != nil {
		if rate = s.Pace(); rate != s.paced {
			s.paced, s.started, s.sent = rate, time.Now(), 0
		}
	}
	if rate > 0 || s.Pace != nil {
		n = min(n, int64(rate*time.Since(s.started).Seconds())-s.sent)
	}
	next := s.next
	for ; n > 0 && (s.Count == 0 || next < s.Count); n-- {
		if err := ctx.Produce(s.Stream, s.Make(next, s.rng)); err != nil {
			return fmt.Errorf("generate %q: %w", s.Name, err)
		}
		next += s.step
	}
	if next != s.next {
		// In the same attempt as the records: the runtime keeps both or
		// neither, and so does the instance (s.next moves only now).
		ctx.State().Set(positionKey, strconv.AppendInt(nil, next, 10))
		s.sent += (next - s.next) / s.step
		s.next = next
	}
	if s.End && s.Count > 0 && s.next >= s.Count {
		return sdk.ErrEndOfStream
	}
	return nil
}

// ProcessRecord implements sdk.Operator; a source has no inputs.
func (s *Source) ProcessRecord(sdk.Context, sdk.Record) error { return nil }

// ProcessTimer implements sdk.Operator.
func (s *Source) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
