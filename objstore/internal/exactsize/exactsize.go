// Package exactsize holds a Put's reader to the size it was given, so that
// every backend fails the same way (objstore.ErrSizeMismatch) on a reader
// that is shorter or longer, instead of storing a truncated object or
// silently dropping the tail.
package exactsize

import (
	"fmt"
	"io"

	"github.com/sluicehq/sluice/objstore"
)

// Reader returns a reader of exactly size bytes of r. A seekable r is
// checked at once (the bytes left after its current offset must be size);
// if it is also an io.ReaderAt the result is an *io.SectionReader over
// those bytes, so backends can read it at offsets and again for retries.
// Any other r is wrapped: its reads fail with ErrSizeMismatch when it ends
// early or has bytes left after size; the read that returns the last of
// the size bytes already probes r for more (so it blocks until r ends).
func Reader(r io.Reader, size int64) (io.Reader, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: negative size %d", objstore.ErrSizeMismatch, size)
	}
	s, ok := r.(io.Seeker)
	if !ok {
		return &exact{r: r, left: size, size: size}, nil
	}
	cur, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("find the reader's offset: %w", err)
	}
	end, err := s.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("find the reader's length: %w", err)
	}
	if _, err := s.Seek(cur, io.SeekStart); err != nil {
		return nil, fmt.Errorf("restore the reader's offset: %w", err)
	}
	if end-cur != size {
		return nil, fmt.Errorf("%w: %d bytes left in the reader, size %d", objstore.ErrSizeMismatch, end-cur, size)
	}
	if ra, ok := r.(io.ReaderAt); ok {
		return io.NewSectionReader(ra, cur, size), nil
	}
	return &exact{r: r, left: size, size: size}, nil
}

// exact passes through the first size bytes of r, then checks r is done.
type exact struct {
	r    io.Reader
	left int64
	size int64
	err  error // sticky: returned by every Read once set
}

func (e *exact) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	if e.left == 0 {
		e.err = e.checkEnd()
		return 0, e.err
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	switch {
	case err == io.EOF && e.left > 0:
		e.err = fmt.Errorf("%w: reader ended after %d of %d bytes", objstore.ErrSizeMismatch, e.size-e.left, e.size)
		return n, e.err
	case err == nil && e.left == 0:
		// Check for more at once, with the last bytes: a backend may stop
		// reading at size and commit. If there is more, withhold the last
		// byte: a consumer reading exactly size bytes, even one that drops
		// an error coming with the last of them (as io.ReadFull does),
		// must then read again and gets the error.
		if e.err = e.checkEnd(); e.err != io.EOF {
			return n - 1, nil
		}
		return n, io.EOF
	case err != nil && err != io.EOF:
		e.err = err
	}
	return n, err
}

// checkEnd returns io.EOF if r has nothing after size bytes.
func (e *exact) checkEnd() error {
	var one [1]byte
	for range 100 { // a Reader may return 0, nil now and then
		n, err := e.r.Read(one[:])
		if n > 0 {
			return fmt.Errorf("%w: reader has more than %d bytes", objstore.ErrSizeMismatch, e.size)
		}
		if err != nil {
			return err // io.EOF: exactly size bytes
		}
	}
	return io.ErrNoProgress
}
