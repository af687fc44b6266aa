package file

import (
	"fmt"
	"os"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// Sink is the line sink operator (see SinkConfig and the package
// documentation). The runtime calls its methods on the instance's
// goroutine; the file it writes may be shared with other instances, under
// the file's lock.
type Sink struct {
	cfg SinkConfig

	op       string
	w        *sharedWriter // nil after Close
	buf      []byte        // whole lines not yet written
	closed   bool
	closeErr error // what Close could not write or sync
}

var (
	_ sdk.Operator = (*Sink)(nil)
	_ sdk.Flusher  = (*Sink)(nil)
	_ sdk.Closer   = (*Sink)(nil)
)

// NewSink checks cfg and returns the factory of a line sink operator.
func NewSink(cfg SinkConfig) (sdk.Factory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return func() sdk.Operator { return &Sink{cfg: cfg} }, nil
}

// Metadata implements sdk.Operator.
func (s *Sink) Metadata() sdk.Metadata {
	return sdk.Metadata{
		Name:        s.cfg.Name,
		Inputs:      []sdk.Input{{Stream: s.cfg.Stream, Routing: s.cfg.Routing}},
		Parallelism: s.cfg.Parallelism,
	}
}

// Init opens the file for appending (creating it if needed), or shares it
// with the other instances in the process that write it.
func (s *Sink) Init(ctx sdk.Context) error {
	s.op = ctx.Instance().Operator
	if s.cfg.Path == Stdio {
		out := s.cfg.Stdout
		if out == nil {
			out = os.Stdout
		}
		s.w = stdoutWriter(out)
		return nil
	}
	w, err := acquireFile(s.cfg.Path, s.cfg.Perm)
	if err != nil {
		return fmt.Errorf("file sink %q: %w", s.op, err)
	}
	s.w = w
	return nil
}

// ProcessRecord adds rec's line to the instance's buffer. When the buffer
// would grow beyond BufferSize, it first writes what the buffer holds; if
// that fails, the attempt fails before rec's line is buffered, so the
// retried record is not written twice.
func (s *Sink) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	n := len(rec.Value) + 1
	if s.cfg.Format == FormatKeyValue {
		n += len(rec.Key) + 1
	}
	if len(s.buf) > 0 && len(s.buf)+n > s.cfg.BufferSize {
		if err := s.writeBuffer(); err != nil {
			return err
		}
	}
	if s.cfg.Format == FormatKeyValue {
		s.buf = append(s.buf, rec.Key...)
		s.buf = append(s.buf, '\t')
	}
	s.buf = append(s.buf, rec.Value...)
	s.buf = append(s.buf, '\n')
	return nil
}

// writeBuffer writes the buffered lines. After a partial write it keeps
// the rest for the next try.
func (s *Sink) writeBuffer() error {
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
func (s *Sink) Flush(sdk.Context) error {
	if s.closed {
		return s.closeErr // closed before a restart: the runtime commits once more
	}
	if s.w == nil {
		return nil // a failed instance's operator is not initialised
	}
	return s.flush()
}

func (s *Sink) flush() error {
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
func (s *Sink) Close(sdk.Context) error {
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

// where names the destination in errors.
func (s *Sink) where() string {
	if s.cfg.Path == Stdio {
		return "stdout"
	}
	return s.cfg.Path
}

// ProcessTimer implements sdk.Operator; the sink sets no timers.
func (s *Sink) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
