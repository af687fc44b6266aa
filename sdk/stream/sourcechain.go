package stream

import (
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// The stateless stages right after a FromSource run in the source's own
// operator when nothing about the source stands in the way (chainsIntoSource):
// the source's Produce hands each record straight down the chain, with no
// stream, batch or mailbox between them, as Flink chains a map into its
// source. The operator keeps the source's name and settings and writes what
// the chain writes.

// chainsIntoSource reports whether s, a stateless stage reading a
// FromSource, runs in the source's operator: s sets no option of its own,
// the source's records cannot fail to decode (codec.Bytes or
// codec.String: a record that did not would fail the source's Poll, over
// and over, instead of going to the dead letters alone), and the source
// implements no optional interface but sdk.Resumable and sdk.Closer (a
// wrapper cannot stand for the others: Replayable, Committer, Flusher, a
// WatermarkGenerator, event-time timers), nor is it read by another stage.
func (p *Pipeline) chainsIntoSource(s *stage) bool {
	in := s.in
	if in.kind != kindFrom || in.source == nil || !in.infallible || len(in.outs) != 1 ||
		s.opts.parallelism != 0 || s.opts.keyGroups != 0 || s.opts.restart != nil || s.opts.unchained {
		return false
	}
	switch in.source().(type) {
	case sdk.Replayable, sdk.Committer, sdk.Flusher, sdk.WatermarkGenerator, sdk.EventTimerProcessor:
		return false
	}
	return true
}

// sourceFactory returns the factory of op, a chain starting with a stage
// that reads the source of the FromSource stage src: the source wrapped so
// that what it produces to its stream goes down the chain.
func (op *plannedOp) sourceFactory(src *stage) sdk.Factory {
	s, meta := op.first, op.meta
	return func() sdk.Operator {
		in := &inst{op: meta.Name}
		c := &chainOp{meta: meta, in: in, handle: s.head(in)}
		base := &sourceChain{src: src.source(), chain: c, stream: src.stream}
		_, resumable := base.src.(sdk.Resumable)
		_, closer := base.src.(sdk.Closer)
		switch {
		case resumable && closer:
			return &resumableCloserChain{base}
		case resumable:
			return &resumableChain{base}
		case closer:
			return &closerChain{base}
		}
		return base
	}
}

// sourceChain runs a source operator whose records go down a chain.
type sourceChain struct {
	src    sdk.Operator
	chain  *chainOp
	stream string // the source's output
}

// chainCtx is the source's Context: Produce to its stream runs the chain.
type chainCtx struct {
	sdk.Context
	c *sourceChain
}

// Produce hands rec down the chain when it is for the source's stream.
func (x chainCtx) Produce(stream string, rec sdk.Record) error {
	if stream != x.c.stream {
		return x.Context.Produce(stream, rec)
	}
	rec.Stream = stream
	return x.c.chain.ProcessRecord(x.Context, rec)
}

// Metadata is the source's, writing what the chain writes.
func (o *sourceChain) Metadata() sdk.Metadata { return o.chain.meta }

// Init initialises the source.
func (o *sourceChain) Init(ctx sdk.Context) error { return o.src.Init(chainCtx{ctx, o}) }

// Poll polls the source.
func (o *sourceChain) Poll(ctx sdk.Context) error { return o.src.(sdk.Source).Poll(chainCtx{ctx, o}) }

// ProcessRecord hands the source a record of its inputs, if it has any.
func (o *sourceChain) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	return o.src.ProcessRecord(chainCtx{ctx, o}, rec)
}

// ProcessTimer hands the source its timers.
func (o *sourceChain) ProcessTimer(ctx sdk.Context, key string, at time.Time) error {
	return o.src.ProcessTimer(chainCtx{ctx, o}, key, at)
}

// closerChain is a sourceChain whose source is an sdk.Closer.
type closerChain struct{ *sourceChain }

// Close closes the source.
func (o *closerChain) Close(ctx sdk.Context) error {
	return o.src.(sdk.Closer).Close(chainCtx{ctx, o.sourceChain})
}

// resumableChain is a sourceChain whose source is sdk.Resumable: its
// position is in the State the chain's operator has, as before.
type resumableChain struct{ *sourceChain }

// ResumesFromState implements sdk.Resumable.
func (*resumableChain) ResumesFromState() {}

// resumableCloserChain is both.
type resumableCloserChain struct{ *sourceChain }

// ResumesFromState implements sdk.Resumable.
func (*resumableCloserChain) ResumesFromState() {}

// Close closes the source.
func (o *resumableCloserChain) Close(ctx sdk.Context) error {
	return o.src.(sdk.Closer).Close(chainCtx{ctx, o.sourceChain})
}
