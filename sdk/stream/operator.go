package stream

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// inst is what the closures of one operator instance share: the context
// of the callback under way and the buffer records are encoded into. An
// instance runs on one goroutine at a time, so none of it is locked.
type inst struct {
	op    string      // the operator's name, for errors
	ctx   sdk.Context // the current callback's; valid during it only
	arena arena
}

// produce sends rec to every one of streams.
func (in *inst) produce(streams []string, rec sdk.Record) error {
	for _, s := range streams {
		if err := in.ctx.Produce(s, rec); err != nil {
			return err
		}
	}
	return nil
}

// decodeError wraps err, the failed decoding of a record of stream for
// stage: returned from ProcessRecord, it sends the record to the
// operator's dead letters at once (it matches sdk.ErrBadRecord) with this
// text.
func (in *inst) decodeError(stage, stream string, err error) error {
	return decodeError(in.op, stage, stream, err)
}

// decodeError wraps err, the failed decoding of a record of stream for
// stage of operator op, as a bad record.
func decodeError(op, stage, stream string, err error) error {
	return badRecord{fmt.Errorf("stream: operator %q, stage %q: decode a record of %q: %w", op, stage, stream, err)}
}

// badRecord is an error that also matches sdk.ErrBadRecord, without
// adding to its text.
type badRecord struct{ err error }

func (e badRecord) Error() string   { return e.err.Error() }
func (e badRecord) Unwrap() []error { return []error{e.err, sdk.ErrBadRecord} }

// encodeError wraps err, the failed encoding of a value of stage.
func (in *inst) encodeError(stage string, err error) error {
	return fmt.Errorf("stream: operator %q, stage %q: encode: %w", in.op, stage, err)
}

// arenaChunk is the size of the blocks an arena hands out encodings from.
const arenaChunk = 16 << 10

// arena hands out the bytes of produced records from shared blocks, so
// that encoding a record costs no allocation of its own: the runtime
// keeps produced records (it does not copy them), so a buffer can never
// be reused, but the free end of a block can, since what was handed out
// lies before it. A record kept by its reader keeps its block alive.
type arena struct{ b []byte }

// buf returns an empty slice to append one encoding to, then pass to
// keep.
func (a *arena) buf() []byte {
	if cap(a.b)-len(a.b) < arenaChunk/16 {
		a.b = make([]byte, 0, arenaChunk)
	}
	return a.b[len(a.b):]
}

// keep returns b, an encoding appended to buf(), as the bytes of a
// record: the arena's block gives it up when b is in it (an encoding
// that did not fit was allocated by append). The result's capacity is
// its length, so nothing appended to it overwrites the block.
func (a *arena) keep(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	free := a.b[len(a.b):cap(a.b)]
	if len(free) > 0 && &b[0] == &free[0] {
		a.b = a.b[:len(a.b)+len(b)]
	}
	return b[:len(b):len(b)]
}

// chainOp is the operator of a chain of stages: it decodes each record it
// reads and hands the value down the chain of closures its first stage's
// head built, which produce to the streams the chain writes.
type chainOp struct {
	meta   sdk.Metadata
	in     *inst
	handle func(sdk.Record) error
}

var _ sdk.Operator = (*chainOp)(nil)

// Metadata returns what Build planned.
func (o *chainOp) Metadata() sdk.Metadata { return o.meta }

// Init does nothing: a chain keeps no state.
func (o *chainOp) Init(sdk.Context) error { return nil }

// ProcessRecord runs rec through the chain.
func (o *chainOp) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	o.in.ctx = ctx
	return o.handle(rec)
}

// ProcessTimer does nothing: a chain sets no timers.
func (o *chainOp) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
