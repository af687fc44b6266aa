package file

import (
	"bufio"
	"io"
	"sync"
)

// stdinQueue bounds the lines the stdin reader reads ahead of the source.
const stdinQueue = 1024

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
