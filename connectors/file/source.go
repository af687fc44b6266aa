package file

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/codec"
	"github.com/sluicehq/sluice/sdk/connect"
)

// offsetPrefix starts the state key under which a file source keeps its
// offset, a connect.Positions of one split, the path:
// "file/offset/<path>" → the position's sequence and the byte offset
// (codec.Int64).
const offsetPrefix = "file/offset/"

// readBufferSize is the size of a source's read buffer.
const readBufferSize = 64 << 10

// Source is the line source operator of a file (see SourceConfig and the
// package documentation). The runtime calls its methods on the instance's
// goroutine. It is sdk.Resumable: it keeps its offset in State, written
// in the same attempt (Poll) as the records of the lines it covers.
type Source struct {
	cfg SourceConfig

	op     string
	log    *slog.Logger
	pos    *connect.Positions[int64]
	f      *os.File
	r      *bufio.Reader
	offset int64 // bytes of the file produced (or dead-lettered) so far
	done   bool  // the input has ended
}

var (
	_ sdk.Resumable = (*Source)(nil)
	_ sdk.Closer    = (*Source)(nil)
)

// NewSource checks cfg and returns the factory of a line source operator:
// a *Source for a file, a *StdinSource for Path "-".
func NewSource(cfg SourceConfig) (sdk.Factory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Path == Stdio {
		r := cfg.Stdin
		if r == nil {
			r = os.Stdin
		}
		in := newStdinReader(r, cfg.MaxLineSize)
		return func() sdk.Operator { return &StdinSource{cfg: cfg, stdin: in} }, nil
	}
	return func() sdk.Operator { return &Source{cfg: cfg} }, nil
}

// ResumesFromState implements sdk.Resumable: after Init, Poll reads on
// from the offset in State, which it writes in the same attempt as the
// records of the lines before it; a restored checkpoint thus makes the
// source produce again exactly the lines that followed it.
func (s *Source) ResumesFromState() {}

// Metadata implements sdk.Operator.
func (s *Source) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.cfg.Name, Outputs: []string{s.cfg.Stream}, Parallelism: 1}
}

// Init restores the offset. It does not open the file: the first Poll
// does, so that a missing file is retried rather than restarting the
// instance.
func (s *Source) Init(ctx sdk.Context) error {
	s.op = ctx.Instance().Operator
	s.log = ctx.Logger()
	s.pos = connect.NewPositions(offsetPrefix, codec.Int64())
	if err := s.pos.Load(ctx.State()); err != nil {
		return fmt.Errorf("file source %q: read offset: %w", s.op, err)
	}
	s.offset, _ = s.pos.Get(s.cfg.Path)
	if s.offset < 0 {
		return fmt.Errorf("file source %q: bad stored offset %d for %s", s.op, s.offset, s.cfg.Path)
	}
	return nil
}

// Poll produces up to Batch lines. At the end of the file the stream
// ends: the next Poll returns sdk.ErrEndOfStream; with Follow it waits for
// the file to grow instead, reading a last line only once its '\n' is
// there. A file that cannot be opened is a
// transient failure (the runtime retries with backoff and shows the error
// in the instance's status); a read error fails the attempt, and the
// restarted instance reads again from the stored offset.
func (s *Source) Poll(ctx sdk.Context) error {
	if s.done {
		return sdk.ErrEndOfStream
	}
	if s.r == nil {
		if err := s.open(); err != nil {
			return err
		}
	}
	start := s.offset
	for range s.cfg.Batch {
		l, err := readLine(s.r, s.cfg.MaxLineSize)
		if err != nil {
			return fmt.Errorf("file source %q: read %s at offset %d: %w", s.op, s.cfg.Path, s.offset, err)
		}
		if l.eof && s.cfg.Follow {
			// Wait for more: a last line without its '\n' is read again,
			// whole, once the file has grown.
			if l.n > 0 {
				if err := s.rewind(); err != nil {
					return err
				}
			}
			break
		}
		if l.n > 0 {
			if err := emit(ctx, s.cfg, s.op, s.log, l, s.offset); err != nil {
				return err
			}
			s.offset += l.n
		}
		if l.eof {
			s.done = true
			s.log.Info("end of file: the source's stream ends (set Follow to read on as the file grows)", "path", s.cfg.Path, "offset", s.offset)
			break
		}
	}
	if s.offset != start {
		// In the same attempt as the records: both are kept, or neither.
		if err := s.pos.Set(ctx.State(), s.cfg.Path, s.offset); err != nil {
			return fmt.Errorf("file source %q: %w", s.op, err)
		}
	}
	return nil
}

// rewind makes the reader read on from the offset again.
func (s *Source) rewind() error {
	if _, err := s.f.Seek(s.offset, io.SeekStart); err != nil {
		return fmt.Errorf("file source %q: seek %s to %d: %w", s.op, s.cfg.Path, s.offset, err)
	}
	s.r.Reset(s.f)
	return nil
}

// open opens the file and seeks to the stored offset.
func (s *Source) open() error {
	st, err := os.Stat(s.cfg.Path)
	if err != nil {
		return fmt.Errorf("file source %q: %w: %w", s.op, err, sdk.ErrTransient)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("file source %q: %s is not a regular file: to read a pipe or device, redirect it to stdin and set Path to %q", s.op, s.cfg.Path, Stdio)
	}
	f, err := os.Open(s.cfg.Path)
	if err != nil {
		return fmt.Errorf("file source %q: %w: %w", s.op, err, sdk.ErrTransient)
	}
	if st, err = f.Stat(); err == nil && st.Size() < s.offset {
		err = fmt.Errorf("%s has %d bytes, %d were read before: %w", s.cfg.Path, st.Size(), s.offset, ErrTruncated)
	}
	if err == nil && s.offset > 0 {
		_, err = f.Seek(s.offset, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("file source %q: %w", s.op, err)
	}
	s.f, s.r = f, bufio.NewReaderSize(f, readBufferSize)
	return nil
}

// emit produces line l, read at offset, for the source op configured by
// cfg, or dead-letters it if it is too long.
func emit(ctx sdk.Context, cfg SourceConfig, op string, log *slog.Logger, l line, offset int64) error {
	rec := sdk.Record{Value: l.data, EventTime: time.Now()}
	if l.long {
		rec.Headers = []sdk.Header{
			{Key: HeaderPath, Value: cfg.Path},
			{Key: HeaderOffset, Value: strconv.FormatInt(offset, 10)},
			{Key: sdk.HeaderError, Value: fmt.Sprintf("%v: %d bytes, MaxLineSize is %d", ErrLineTooLong, l.n, cfg.MaxLineSize)},
			{Key: sdk.HeaderOperator, Value: op},
		}
		log.Warn("line longer than MaxLineSize sent to the dead-letter stream", "path", cfg.Path, "offset", offset, "bytes", l.n)
		return ctx.Produce(sdk.DeadLetterStream(op), rec)
	}
	if cfg.Key != nil {
		rec.Key = cfg.Key(l.data)
	}
	return ctx.Produce(cfg.Stream, rec)
}

// Close closes the file.
func (s *Source) Close(sdk.Context) error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f, s.r = nil, nil
	return err
}

// ProcessRecord implements sdk.Operator; a source has no inputs.
func (s *Source) ProcessRecord(sdk.Context, sdk.Record) error { return nil }

// ProcessTimer implements sdk.Operator.
func (s *Source) ProcessTimer(sdk.Context, string, time.Time) error { return nil }
