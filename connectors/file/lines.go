package file

import (
	"bufio"
	"errors"
	"io"
)

// line is one line read by readLine.
type line struct {
	data []byte // the line without its '\n'; a fresh slice; cut to the maximum if long
	n    int64  // bytes consumed from the input: the whole line and its '\n'
	long bool   // the line was longer than the maximum
	eof  bool   // the input ended after this line (which had no '\n'; it may be empty, with n == 0)
}

// readLine reads one line of at most limit bytes (without its '\n') from r.
// A longer line is consumed in full but only its first limit bytes are kept.
// A read error other than io.EOF is returned with whatever was consumed
// of the line discarded: the caller has not counted those bytes.
func readLine(r *bufio.Reader, limit int) (line, error) {
	var l line
	for {
		frag, err := r.ReadSlice('\n')
		l.n += int64(len(frag))
		if err == nil {
			frag = frag[:len(frag)-1]
		}
		if room := limit - len(l.data); len(frag) > room {
			l.long = true
			frag = frag[:max(room, 0)]
		}
		if l.data == nil {
			l.data = make([]byte, 0, len(frag))
		}
		l.data = append(l.data, frag...)
		switch {
		case err == nil:
			return l, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			l.eof = true
			return l, nil
		default:
			return line{}, err
		}
	}
}
