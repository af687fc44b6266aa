package stream

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
)

// format is how the values of a stream are records on a Sluice stream.
type format[T any] struct {
	// encode makes the record of v, its bytes from a (nil: allocated).
	encode func(a *arena, v T) (sdk.Record, error)
	// decode returns the value of rec; it keeps none of rec's bytes.
	decode func(rec sdk.Record) (T, error)
}

// valueFormat puts a value in the record's Value, encoded with c, and no
// key.
func valueFormat[T any](c codec.Codec[T]) format[T] {
	return format[T]{
		encode: func(a *arena, v T) (sdk.Record, error) {
			b, err := encodeWith(a, c, v)
			return sdk.Record{Value: b}, err
		},
		decode: func(rec sdk.Record) (T, error) { return c.Decode(rec.Value) },
	}
}

// encodeWith encodes v with c, into a (nil: a slice of its own).
func encodeWith[T any](a *arena, c codec.Codec[T], v T) ([]byte, error) {
	if a == nil {
		return c.Encode(nil, v)
	}
	b, err := c.Encode(a.buf(), v)
	if err != nil {
		return nil, err
	}
	return a.keep(b), nil
}

// Stream is the output of a stage: values of type T, handed from stage to
// stage as Go values where the stages chain, and as records encoded with
// the stage's codec where they do not (see the package doc). Pass it to
// the next stage (Map, Filter, FlatMap, KeyBy, To, Output); a Stream may
// feed several stages, each of which sees every value.
type Stream[T any] struct {
	st    *stage
	c     codec.Codec[T] // a value alone (KeyBy's record values)
	f     format[T]      // a value as a record of the stream the stage publishes
	links []link[T]      // the stages after it that take Go values when they chain
}

// link is a stage after a stream with how it takes the stream's values
// when chained: chain builds, for an instance, the function taking each.
type link[T any] struct {
	st    *stage
	chain func(in *inst) func(T) error
}

// attach adds st, a stage reading s, which takes values with chain when
// it chains to s and otherwise starts an operator decoding s's records.
func (s *Stream[T]) attach(st *stage, chain func(in *inst) func(T) error) {
	if s.st.p.built {
		return // refused (ErrBuilt): the built operators read links
	}
	s.links = append(s.links, link[T]{st: st, chain: chain})
	dec := s.f.decode
	st.head = func(in *inst) func(sdk.Record) error {
		next := chain(in)
		return func(rec sdk.Record) error {
			v, err := dec(rec)
			if err != nil {
				return in.decodeError(st.name, rec.Stream, err)
			}
			return next(v)
		}
	}
}

// push builds, for an instance, the function that hands each value of s
// on: to the stages chained to s, then, encoded once, to the streams s
// writes (to the operators reading it, and a To or Output). With one
// chained stage and no stream it is that stage's function itself.
func (s *Stream[T]) push(in *inst) func(T) error {
	var next []func(T) error
	for _, l := range s.links {
		if l.st.chained {
			next = append(next, l.chain(in))
		}
	}
	targets, enc, name := s.st.targets, s.f.encode, s.st.name
	if len(targets) == 0 {
		switch len(next) {
		case 0:
			return func(T) error { return nil } // unreachable after Build's checks
		case 1:
			return next[0]
		}
	}
	return func(v T) error {
		for _, n := range next {
			if err := n(v); err != nil {
				return err
			}
		}
		if len(targets) == 0 {
			return nil
		}
		rec, err := enc(&in.arena, v)
		if err != nil {
			return in.encodeError(name, err)
		}
		return in.produce(targets, rec)
	}
}

// newStream adds a stage of kind k reading in (nil for From) whose values
// are encoded with c, alone in a record's Value.
func newStream[T any](p *Pipeline, name string, k kind, in *stage, c codec.Codec[T], opts []Option) *Stream[T] {
	s := &Stream[T]{st: p.add(name, k, in, opts), c: c, f: valueFormat(c)}
	requireCodec(s.st, c)
	return s
}

// requireCodec records a problem with s for a codec without functions.
func requireCodec[T any](s *stage, c codec.Codec[T]) {
	s.require(c.Encode != nil && c.Decode != nil, "the codec's Encode and Decode")
}

// From adds a stage reading the Sluice stream of that name, whose record
// values are encoded with c: records produced by an operator outside the
// pipeline, by node.Runtime.Produce, or sent by a test (Stream.Send). The
// stage is named after the stream.
func From[T any](p *Pipeline, stream string, c codec.Codec[T]) *Stream[T] {
	s := newStream(p, stream, kindFrom, nil, c, nil)
	s.st.stream = stream
	return s
}

// FromSource adds a stage named name reading what source produces: a
// source operator (a connector, a generator) with one output, whose
// record values are encoded with c. Build returns the source's factory
// with the pipeline's operators, as it is (its name is its own).
func FromSource[T any](p *Pipeline, name string, source sdk.Factory, c codec.Codec[T]) *Stream[T] {
	s := newStream(p, name, kindFrom, nil, c, nil)
	s.st.source = source
	s.st.infallible = c.Name == "bytes" || c.Name == "string"
	s.st.require(source != nil, "the source")
	return s
}

// Map adds a stage that turns each value into f(value), encoded with c
// where it leaves its operator. It chains.
func Map[T, U any](s *Stream[T], name string, f func(T) U, c codec.Codec[U], opts ...Option) *Stream[U] {
	out := newStream(s.st.p, name, kindMap, s.st, c, opts)
	out.st.require(f != nil, "Map's function")
	s.attach(out.st, func(in *inst) func(T) error {
		next := out.push(in)
		return func(v T) error { return next(f(v)) }
	})
	return out
}

// Filter adds a stage that keeps the values for which keep is true. It
// chains.
func Filter[T any](s *Stream[T], name string, keep func(T) bool, opts ...Option) *Stream[T] {
	out := newStream(s.st.p, name, kindFilter, s.st, s.c, opts)
	out.f = s.f
	out.st.require(keep != nil, "Filter's function")
	s.attach(out.st, func(in *inst) func(T) error {
		next := out.push(in)
		return func(v T) error {
			if !keep(v) {
				return nil
			}
			return next(v)
		}
	})
	return out
}

// FlatMap adds a stage that calls f with each value and a function emit
// handing on a value, as many times as f calls it (zero or more), each
// encoded with c where it leaves its operator. emit must not be called
// after f returns. It chains.
func FlatMap[T, U any](s *Stream[T], name string, f func(v T, emit func(U)), c codec.Codec[U], opts ...Option) *Stream[U] {
	out := newStream(s.st.p, name, kindFlatMap, s.st, c, opts)
	out.st.require(f != nil, "FlatMap's function")
	s.attach(out.st, func(in *inst) func(T) error {
		next := out.push(in)
		var err error // the first failure of the values emitted
		emit := func(u U) {
			if err == nil {
				err = next(u)
			}
		}
		return func(v T) error {
			f(v, emit)
			e := err
			err = nil
			return e
		}
	})
	return out
}

// Out is where a pipeline's path ends (To, Output): a Sluice stream of
// records encoded as the stream given to To or Output was.
type Out[T any] struct {
	st *stage
	f  format[T]
}

// To adds a stage that sends the stream's values, encoded, to sink: an
// operator (a connector) with one input, whose stream the pipeline
// produces to. Build returns the sink's factory with the pipeline's
// operators, as it is. The stage chains as Map does (it is where its
// operator's records leave) and after KeyBy; after From or Aggregate, or
// unchained, it is an operator checking that each record decodes and
// passing it on.
func To[T any](s *Stream[T], name string, sink sdk.Factory, opts ...Option) *Out[T] {
	return to(s.st, name, s.f, sink, opts)
}

// Output adds a stage, named after the stream, that produces the
// stream's values, encoded, to the Sluice stream of that name: for
// readers outside the pipeline (node.Runtime.Subscribe, another operator,
// a test: Out.Take). It chains like To.
func Output[T any](s *Stream[T], stream string, opts ...Option) *Out[T] {
	return output(s.st, stream, s.f, opts)
}

// to adds a To stage after in, whose records are in format f.
func to[T any](in *stage, name string, f format[T], sink sdk.Factory, opts []Option) *Out[T] {
	o := &Out[T]{st: in.p.add(name, kindTo, in, opts), f: f}
	o.st.sink = sink
	o.st.require(sink != nil, "the sink")
	o.st.head = forward(o.st, f.decode)
	return o
}

// output adds an Output stage after in, whose records are in format f.
func output[T any](in *stage, stream string, f format[T], opts []Option) *Out[T] {
	o := &Out[T]{st: in.p.add(stream, kindOutput, in, opts), f: f}
	o.st.stream = stream
	o.st.head = forward(o.st, f.decode)
	return o
}

// forward is the head of a To or Output that does not chain: it checks
// that each record decodes and sends it on as it is.
func forward[T any](st *stage, decode func(sdk.Record) (T, error)) func(in *inst) func(sdk.Record) error {
	return func(in *inst) func(sdk.Record) error {
		return func(rec sdk.Record) error {
			if _, err := decode(rec); err != nil {
				return in.decodeError(st.name, rec.Stream, err)
			}
			return in.ctx.Produce(st.stream, rec)
		}
	}
}

// Stream returns the name of the Sluice stream written: Output's stream,
// or, once Build has run, the input stream of To's sink.
func (o *Out[T]) Stream() string { return o.st.stream }

// Decode returns the value of a record of the stream.
func (o *Out[T]) Decode(rec sdk.Record) (T, error) { return o.f.decode(rec) }

// Taker is what Out.Take reads records from: sdktest.Graph and
// sdktest.Harness.
type Taker interface {
	// Take returns and forgets the records produced to stream.
	Take(stream string) []sdk.Record
}

// Take takes the records produced to the stream from t and decodes them,
// in the order produced: a test's typed output.
func (o *Out[T]) Take(t Taker) ([]T, error) {
	recs := t.Take(o.st.stream)
	vs := make([]T, 0, len(recs))
	for _, r := range recs {
		v, err := o.f.decode(r)
		if err != nil {
			return vs, fmt.Errorf("stream: %s %q: %w", o.st.kind, o.st.stream, err)
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// Sender is what Stream.Send hands records to: sdktest.Graph and
// sdktest.Harness.
type Sender interface {
	// Send delivers recs to the readers of stream.
	Send(stream string, recs ...sdk.Record) error
}

// Stream returns the name of the Sluice stream a From stage reads (once
// Build has run, also FromSource's: its source's output), or "" for the
// other stages, whose streams are the pipeline's business.
func (s *Stream[T]) Stream() string {
	if s.st.kind != kindFrom {
		return ""
	}
	return s.st.stream
}

// Record returns the record of v as a From stage reads it, to produce it
// from outside (node.Runtime.Produce).
func (s *Stream[T]) Record(v T) (sdk.Record, error) { return s.f.encode(nil, v) }

// Send encodes vs and sends them to the stream a From stage reads, in
// order: a test's typed input.
func (s *Stream[T]) Send(to Sender, vs ...T) error { return s.SendAt(to, time.Time{}, vs...) }

// SendAt is Send with at as the records' event time (for windows).
func (s *Stream[T]) SendAt(to Sender, at time.Time, vs ...T) error {
	if s.Stream() == "" {
		return fmt.Errorf("stream: stage %q (%v) reads no stream of its own: send to its From", s.st.name, s.st.kind)
	}
	var a arena
	recs := make([]sdk.Record, len(vs))
	for i, v := range vs {
		r, err := s.f.encode(&a, v)
		if err != nil {
			return fmt.Errorf("stream: stage %q: encode: %w", s.st.name, err)
		}
		r.EventTime = at
		recs[i] = r
	}
	return to.Send(s.st.stream, recs...)
}
