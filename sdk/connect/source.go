package connect

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
)

// Reader is what a resumable source's author writes: reading records of a
// split from a position. The kit calls it on the instance's goroutine.
type Reader[P any] interface {
	// Read returns the records of split that follow pos (at most what one
	// Poll should produce; none if nothing is there yet, returning within
	// about 100 ms) and the position after them. A record without a
	// Stream goes to the source's Stream (set Stream to send one
	// elsewhere, such as the dead-letter stream). sdk.ErrEndOfStream
	// (with or without records) says split has ended: a bounded source's
	// end. Any other error fails the Poll: the runtime restarts the
	// instance, which reads again from the position in State (wrap
	// sdk.ErrTransient for "retry, not a failure").
	Read(ctx sdk.Context, split string, pos P) (recs []sdk.Record, next P, err error)
}

// SourceConfig describes a resumable source built from a Reader.
type SourceConfig[P any] struct {
	// Name is the operator's name; Stream its output stream.
	Name, Stream string
	// Parallelism is the number of instances (0: 1); KeyGroups the
	// operator's key groups (0: the runtime's default).
	Parallelism, KeyGroups int
	// Watermarks is the source's watermark strategy; nil: none.
	Watermarks *sdk.WatermarkStrategy
	// Position encodes positions in State (required).
	Position codec.Codec[P]
	// StateKey prefixes the state keys of the positions (default
	// "connect/pos/"); see Positions.
	StateKey string
	// Splits returns the splits this instance reads, called at its first
	// Poll; nil: one split "" read by instance 0 (Spread assigns fixed
	// splits over the instances).
	Splits func(ctx sdk.Context) ([]string, error)
	// Start returns the position of a split State has none for; nil: P's
	// zero value.
	Start func(ctx sdk.Context, split string) (P, error)
	// Open returns the instance's Reader, called at its first Poll (so
	// that a system that cannot be reached fails a Poll, retried with
	// backoff, rather than Init). A Reader that is an io.Closer-like
	// `Close() error` is closed when the instance stops.
	Open func(ctx sdk.Context) (Reader[P], error)
}

// Validate reports a configuration that cannot work.
func (c SourceConfig[P]) Validate() error {
	switch {
	case c.Name == "" || c.Stream == "":
		return fmt.Errorf("%w: source %q: Name and Stream are required", ErrConfig, c.Name)
	case c.Position.Encode == nil || c.Position.Decode == nil:
		return fmt.Errorf("%w: source %q: Position (a codec, such as codec.Int64()) is required", ErrConfig, c.Name)
	case c.Open == nil:
		return fmt.Errorf("%w: source %q: Open is required", ErrConfig, c.Name)
	}
	return nil
}

// Spread returns a SourceConfig.Splits assigning splits over the
// instances: instance i reads splits[j] for j ≡ i (mod parallelism).
func Spread(splits ...string) func(ctx sdk.Context) ([]string, error) {
	return func(ctx sdk.Context) ([]string, error) {
		info := ctx.Instance()
		var out []string
		for j := info.Index; j < len(splits); j += max(info.Parallelism, 1) {
			out = append(out, splits[j])
		}
		return out, nil
	}
}

// Source is the operator NewSource builds: sdk.Resumable, it keeps each
// split's position in State (Positions), written in the same Poll as the
// records before it. Each Poll reads every split that has not ended once,
// starting with the next in turn; once all have ended Poll returns
// sdk.ErrEndOfStream. Connectors with more to do may embed a *Source.
type Source[P any] struct {
	cfg    SourceConfig[P]
	pos    *Positions[P]
	reader Reader[P]
	splits []string
	ended  map[string]bool
	next   int // the split the next Poll starts with
}

var (
	_ sdk.Resumable = (*Source[int64])(nil)
	_ sdk.Closer    = (*Source[int64])(nil)
)

// NewSource checks cfg and returns the factory of its operator.
func NewSource[P any](cfg SourceConfig[P]) (sdk.Factory, error) {
	f, err := NewSourceFunc(cfg)
	if err != nil {
		return nil, err
	}
	return func() sdk.Operator { return f() }, nil
}

// NewSourceFunc is NewSource returning the operator's own type, for
// connectors that wrap it.
func NewSourceFunc[P any](cfg SourceConfig[P]) (func() *Source[P], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.StateKey == "" {
		cfg.StateKey = "connect/pos/"
	}
	return func() *Source[P] { return &Source[P]{cfg: cfg} }, nil
}

// Metadata implements sdk.Operator.
func (s *Source[P]) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.cfg.Name, Outputs: []string{s.cfg.Stream}, Parallelism: s.cfg.Parallelism,
		KeyGroups: s.cfg.KeyGroups, Watermarks: s.cfg.Watermarks}
}

// ResumesFromState implements sdk.Resumable.
func (s *Source[P]) ResumesFromState() {}

// Init loads the positions State holds.
func (s *Source[P]) Init(ctx sdk.Context) error {
	s.pos = NewPositions(s.cfg.StateKey, s.cfg.Position)
	s.ended = map[string]bool{}
	if err := s.pos.Load(ctx.State()); err != nil {
		return fmt.Errorf("source %q: %w", s.cfg.Name, err)
	}
	return nil
}

// Poll reads every split that has not ended once (see Reader.Read) and
// produces what it returned, writing each split's new position to State.
func (s *Source[P]) Poll(ctx sdk.Context) error {
	if s.reader == nil {
		if err := s.open(ctx); err != nil {
			return err
		}
	}
	live := 0
	for k := range s.splits {
		split := s.splits[(s.next+k)%len(s.splits)]
		if s.ended[split] {
			continue
		}
		pos, err := s.position(ctx, split)
		if err != nil {
			return err
		}
		recs, next, err := s.reader.Read(ctx, split, pos)
		end := errors.Is(err, sdk.ErrEndOfStream)
		if err != nil && !end {
			return fmt.Errorf("source %q: read split %q: %w", s.cfg.Name, split, err)
		}
		for _, rec := range recs {
			stream := rec.Stream
			if stream == "" {
				stream = s.cfg.Stream
			}
			if err := ctx.Produce(stream, rec); err != nil {
				return fmt.Errorf("source %q: %w", s.cfg.Name, err)
			}
		}
		if len(recs) > 0 || !s.hasPosition(split) {
			if err := s.pos.Set(ctx.State(), split, next); err != nil {
				return err
			}
		}
		if end {
			s.ended[split] = true
		} else {
			live++
		}
	}
	if len(s.splits) > 0 {
		s.next = (s.next + 1) % len(s.splits)
	}
	if live == 0 {
		return sdk.ErrEndOfStream
	}
	return nil
}

func (s *Source[P]) hasPosition(split string) bool {
	_, ok := s.pos.Get(split)
	return ok
}

// position returns split's position: State's, else Start's.
func (s *Source[P]) position(ctx sdk.Context, split string) (P, error) {
	if p, ok := s.pos.Get(split); ok {
		return p, nil
	}
	var zero P
	if s.cfg.Start == nil {
		return zero, nil
	}
	p, err := s.cfg.Start(ctx, split)
	if err != nil {
		return zero, fmt.Errorf("source %q: start position of split %q: %w", s.cfg.Name, split, err)
	}
	return p, nil
}

// open finds the instance's splits and opens its Reader.
func (s *Source[P]) open(ctx sdk.Context) error {
	switch {
	case s.cfg.Splits != nil:
		splits, err := s.cfg.Splits(ctx)
		if err != nil {
			return fmt.Errorf("source %q: splits: %w", s.cfg.Name, err)
		}
		s.splits = splits
	case ctx.Instance().Index == 0:
		s.splits = []string{""}
	}
	r, err := s.cfg.Open(ctx)
	if err != nil {
		return fmt.Errorf("source %q: open: %w", s.cfg.Name, err)
	}
	s.reader = r
	return nil
}

// Close closes the Reader if it has a Close method.
func (s *Source[P]) Close(sdk.Context) error {
	c, ok := s.reader.(interface{ Close() error })
	s.reader = nil
	if !ok {
		return nil
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("source %q: close: %w", s.cfg.Name, err)
	}
	return nil
}

// ProcessRecord implements sdk.Operator; a source has no inputs.
func (s *Source[P]) ProcessRecord(sdk.Context, sdk.Record) error { return nil }

// ProcessTimer implements sdk.Operator.
func (s *Source[P]) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
