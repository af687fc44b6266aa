package file

import (
	"fmt"
	"os"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/connect"
)

// lines is what the file and stdout sinks share: a buffer of whole lines
// written to a sharedWriter. Its methods run on the instance's goroutine;
// the destination may be shared with other instances, under its lock.
type lines struct {
	cfg SinkConfig

	op       string
	w        *sharedWriter // nil after Close
	buf      []byte        // whole lines not yet written
	closed   bool
	closeErr error // what Close could not write or sync
}

// Sink is the line sink operator of a file (see SinkConfig and the
// package documentation). The runtime calls its methods on the instance's
// goroutine. Under exactly-once it writes part files committed by
// checkpoints (sdk.Committer); otherwise it appends to the file, which it
// may share with other instances, under the file's lock.
type Sink struct {
	lines
	parts *partWriter // exactly-once; nil otherwise
	tp    connect.TwoPhase
}

// StdoutSink is the line sink operator of stdout (SinkConfig.Path "-").
// Stdout cannot take lines back, so it is not an sdk.Committer: the
// runtime refuses it under exactly-once (and Init fails there).
type StdoutSink struct {
	lines
}

var (
	_ sdk.Operator  = (*Sink)(nil)
	_ sdk.Flusher   = (*Sink)(nil)
	_ sdk.Committer = (*Sink)(nil)
	_ sdk.Closer    = (*Sink)(nil)
	_ sdk.Flusher   = (*StdoutSink)(nil)
	_ sdk.Closer    = (*StdoutSink)(nil)
)

// NewSink checks cfg and returns the factory of a line sink operator: a
// *Sink for a file, a *StdoutSink for Path "-".
func NewSink(cfg SinkConfig) (sdk.Factory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Path == Stdio {
		return func() sdk.Operator { return &StdoutSink{lines{cfg: cfg}} }, nil
	}
	return func() sdk.Operator { return &Sink{lines: lines{cfg: cfg}} }, nil
}

// Metadata implements sdk.Operator.
func (s *lines) Metadata() sdk.Metadata {
	return sdk.Metadata{
		Name:        s.cfg.Name,
		Inputs:      []sdk.Input{{Stream: s.cfg.Stream, Routing: s.cfg.Routing}},
		Parallelism: s.cfg.Parallelism,
	}
}

// Init opens the file for appending (creating it if needed), or shares it
// with the other instances in the process that write it. Under
// exactly-once it deletes the instance's part in progress instead, and
// deletes its pending parts that the restored State does not know of once
// a newer checkpoint completes (see the package documentation).
func (s *Sink) Init(ctx sdk.Context) error {
	s.op = ctx.Instance().Operator
	if ctx.Instance().Guarantee == sdk.ExactlyOnce {
		p := newPartWriter(ctx, s.cfg)
		if err := s.tp.Init(ctx, p, statePrefix, []byte(s.cfg.Path)); err != nil {
			return fmt.Errorf("file sink %q: %w", s.op, err)
		}
		s.parts = p
		return nil
	}
	w, err := acquireFile(s.cfg.Path, s.cfg.Perm)
	if err != nil {
		return fmt.Errorf("file sink %q: %w", s.op, err)
	}
	s.w = w
	return nil
}

// Init prepares writing to stdout (or SinkConfig.Stdout). It fails under
// exactly-once with ErrNotResumable.
func (s *StdoutSink) Init(ctx sdk.Context) error {
	s.op = ctx.Instance().Operator
	if ctx.Instance().Guarantee == sdk.ExactlyOnce {
		return fmt.Errorf("file sink %q: %w: write to a file instead, or use at-least-once", s.op, ErrNotResumable)
	}
	out := s.cfg.Stdout
	if out == nil {
		out = os.Stdout
	}
	s.w = stdoutWriter(out)
	return nil
}

// lineLen returns the length of rec's line in format f, with its '\n'.
func lineLen(f Format, rec sdk.Record) int {
	n := len(rec.Value) + 1
	if f == FormatKeyValue {
		n += len(rec.Key) + 1
	}
	return n
}

// appendLine appends rec's line in format f, with its '\n', to b.
func appendLine(b []byte, f Format, rec sdk.Record) []byte {
	if f == FormatKeyValue {
		b = append(append(b, rec.Key...), '\t')
	}
	return append(append(b, rec.Value...), '\n')
}

// ProcessRecord adds rec's line to the instance's buffer. When the buffer
// would grow beyond BufferSize, it first writes what the buffer holds; if
// that fails, the attempt fails before rec's line is buffered, so the
// retried record is not written twice.
func (s *lines) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	if len(s.buf) > 0 && len(s.buf)+lineLen(s.cfg.Format, rec) > s.cfg.BufferSize {
		if err := s.writeBuffer(); err != nil {
			return err
		}
	}
	s.buf = appendLine(s.buf, s.cfg.Format, rec)
	return nil
}

// ProcessRecord adds rec's line to the instance's buffer, as for a
// StdoutSink; under exactly-once the buffer is written to the instance's
// part in progress.
func (s *Sink) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	if s.parts != nil {
		return s.tp.Write(ctx, rec)
	}
	return s.lines.ProcessRecord(ctx, rec)
}

// writeBuffer writes the buffered lines. After a partial write it keeps
// the rest for the next try.
func (s *lines) writeBuffer() error {
	if len(s.buf) == 0 {
		return nil
	}
	n, err := s.w.write(s.buf)
	s.buf = s.buf[:copy(s.buf, s.buf[n:])]
	if err != nil {
		return fmt.Errorf("file sink %q: write %s: %w", s.op, s.where(), err)
	}
	return nil
}

// Flush implements sdk.Flusher: it writes the buffered lines and, for a
// file, fsyncs it, so that every record processed before is on disk when
// the runtime commits the instance's state. An error makes the runtime
// not count the commit as durable and flush again at the next commit.
func (s *lines) Flush(sdk.Context) error {
	if s.closed {
		return s.closeErr // closed before a restart: the runtime commits once more
	}
	if s.w == nil {
		return nil // a failed instance's operator is not initialised
	}
	return s.flush()
}

// Flush implements sdk.Flusher as for a StdoutSink; under exactly-once it
// does nothing (PreCommit writes and fsyncs at the barrier).
func (s *Sink) Flush(ctx sdk.Context) error {
	if s.parts != nil {
		return nil
	}
	return s.lines.Flush(ctx)
}

// PreCommit implements sdk.Committer. Under exactly-once it writes the
// lines since the previous barrier to the instance's part in progress,
// fsyncs it, renames it to the pending part of checkpoint (fsyncing the
// directory) and records that in State; the next line starts a new part.
// Under the other guarantees it flushes like Flush.
func (s *Sink) PreCommit(ctx sdk.Context, checkpoint uint64) error {
	if s.parts == nil {
		return s.Flush(ctx)
	}
	if err := s.tp.PreCommit(ctx, checkpoint); err != nil {
		return fmt.Errorf("file sink %q: checkpoint %d: %w", s.op, checkpoint, err)
	}
	return nil
}

// Commit implements sdk.Committer. Under exactly-once it renames every
// pending part State lists for checkpoint or an earlier one to its
// committed name, in checkpoint order, fsyncs the directory and forgets
// them; a part already committed counts as committed. Under the other
// guarantees it does nothing.
func (s *Sink) Commit(ctx sdk.Context, checkpoint uint64) error {
	if s.parts == nil {
		return nil
	}
	if err := s.tp.Commit(ctx, checkpoint); err != nil {
		return fmt.Errorf("file sink %q: commit checkpoint %d: %w", s.op, checkpoint, err)
	}
	return nil
}

func (s *lines) flush() error {
	if err := s.writeBuffer(); err != nil {
		return err
	}
	if err := s.w.sync(); err != nil {
		return fmt.Errorf("file sink %q: %w", s.op, err)
	}
	return nil
}

// Close flushes like Flush and releases the file (the last instance
// holding it closes it). It is safe to call twice.
func (s *lines) Close(sdk.Context) error {
	if s.closed {
		return s.closeErr
	}
	s.closed = true
	if s.w == nil {
		return nil // Init failed
	}
	err := s.flush()
	if rerr := s.w.release(); err == nil && rerr != nil {
		err = fmt.Errorf("file sink %q: close %s: %w", s.op, s.where(), rerr)
	}
	s.w, s.buf, s.closeErr = nil, nil, err
	return err
}

// Close is as for a StdoutSink; under exactly-once it deletes the part in
// progress (its lines come again after a restore) and leaves the pending
// parts for Commit after a restore.
func (s *Sink) Close(ctx sdk.Context) error {
	if s.parts != nil {
		if !s.closed {
			s.closed = true
			s.closeErr = s.parts.close()
		}
		return s.closeErr
	}
	return s.lines.Close(ctx)
}

// where names the destination in errors.
func (s *lines) where() string {
	if s.cfg.Path == Stdio {
		return "stdout"
	}
	return s.cfg.Path
}

// ProcessTimer implements sdk.Operator; the sink sets no timers.
func (s *lines) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
