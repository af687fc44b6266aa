package file

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/sdk"
)

// stdinQueue bounds the lines the stdin reader reads ahead of the source.
const stdinQueue = 1024

// StdinSource is the line source operator of stdin (SourceConfig.Path
// "-"; see the package documentation). Stdin cannot be read again, so it
// keeps no position and is not sdk.Resumable: the runtime refuses it
// under exactly-once (and Init fails there). The runtime calls its methods
// on the instance's goroutine; the stdin reader runs on a goroutine of its
// own.
type StdinSource struct {
	cfg   SourceConfig
	stdin *stdinReader // shared by every incarnation of one factory

	op   string
	log  *slog.Logger
	done bool // the input has ended
}

var (
	_ sdk.Source = (*StdinSource)(nil)
	_ sdk.Closer = (*StdinSource)(nil)
)

// Metadata implements sdk.Operator.
func (s *StdinSource) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: s.cfg.Name, Outputs: []string{s.cfg.Stream}, Parallelism: 1}
}

// Init starts the stdin reader (once per factory).
func (s *StdinSource) Init(ctx sdk.Context) error {
	s.op = ctx.Instance().Operator
	s.log = ctx.Logger()
	if ctx.Instance().Guarantee == sdk.ExactlyOnce {
		return fmt.Errorf("file source %q: %w: read a file instead, or use at-least-once", s.op, ErrNotResumable)
	}
	if err := s.stdin.start(); err != nil {
		return fmt.Errorf("file source %q: %w", s.op, err)
	}
	return nil
}

// Poll produces up to Batch lines that the stdin reader has read; it does
// not wait for more. At the end of stdin (or a read error, which is
// logged) it produces nothing more.
func (s *StdinSource) Poll(ctx sdk.Context) error {
	if s.done {
		return nil
	}
	for range s.cfg.Batch {
		l, ok, ended := s.stdin.next()
		if !ok {
			if ended {
				s.done = true
				if err := s.stdin.err; err != nil {
					s.log.Error("reading stdin failed: the source produces nothing more", "error", err, "offset", s.stdin.consumed)
				} else {
					s.log.Info("end of stdin: the source produces nothing more", "offset", s.stdin.consumed)
				}
			}
			return nil
		}
		if err := emit(ctx, s.cfg, s.op, s.log, l, s.stdin.consumed); err != nil {
			return err
		}
		s.stdin.consumed += l.n
	}
	return nil
}

// Close stops the stdin reader when the instance stops for good (ctx is
// done: the runtime is stopping).
func (s *StdinSource) Close(ctx sdk.Context) error {
	if ctx.Err() != nil {
		s.stdin.stop()
	}
	return nil
}

// ProcessRecord implements sdk.Operator; a source has no inputs.
func (s *StdinSource) ProcessRecord(sdk.Context, sdk.Record) error { return nil }

// ProcessTimer implements sdk.Operator.
func (s *StdinSource) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// stdinReader reads lines from stdin (or SourceConfig.Stdin) on a
// goroutine of its own, because a read from stdin blocks for as long as
// the writer likes, while Poll must return promptly.
//
// One stdinReader belongs to one source factory and outlives the
// factory's Operator values: an instance that restarts takes up the lines
// where the failed incarnation left them. Its goroutine is started by the
// first Init and ends at the end of the input, at a read error, or after
// stop (called when the runtime stops the instance for good) once its
// current read returns. A read in progress cannot be interrupted (os.Stdin
// has no deadline in general), so after stop the goroutine may stay
// blocked in that read until the writer writes or closes; what it reads
// then is dropped. A process therefore reads stdin with one runtime.
type stdinReader struct {
	in    io.Reader
	limit int

	once     sync.Once
	stopOnce sync.Once
	lines    chan line     // bounded; closed when the goroutine ends
	quit     chan struct{} // closed by stop
	err      error         // the read error that ended the input; written before lines is closed

	consumed int64 // bytes taken by the source so far (instance goroutine only)
}

func newStdinReader(in io.Reader, limit int) *stdinReader {
	return &stdinReader{in: in, limit: limit, lines: make(chan line, stdinQueue), quit: make(chan struct{})}
}

// start starts the goroutine, once. It fails with ErrStdinStopped after
// stop.
func (r *stdinReader) start() error {
	select {
	case <-r.quit:
		return ErrStdinStopped
	default:
	}
	r.once.Do(func() { go r.run() })
	return nil
}

// run reads lines into r.lines until the input ends or stop.
func (r *stdinReader) run() {
	defer close(r.lines)
	br := bufio.NewReaderSize(r.in, readBufferSize)
	for {
		l, err := readLine(br, r.limit)
		if err != nil {
			r.err = err
			return
		}
		if l.n > 0 {
			select {
			case r.lines <- l:
			case <-r.quit:
				return
			}
		}
		if l.eof {
			return
		}
	}
}

// next returns the next line read, without waiting. ok is false when
// there is none now; ended then says whether there will never be one
// (r.err holds the read error, if that is why).
func (r *stdinReader) next() (l line, ok, ended bool) {
	select {
	case l, ok = <-r.lines:
		return l, ok, !ok
	default:
		return line{}, false, false
	}
}

// stop makes the goroutine end; safe to call more than once.
func (r *stdinReader) stop() { r.stopOnce.Do(func() { close(r.quit) }) }
