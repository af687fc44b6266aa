package exactsize

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sluicehq/sluice/objstore"
)

type stream struct{ r io.Reader }

func (s stream) Read(p []byte) (int, error) { return s.r.Read(p) }

func TestReader(t *testing.T) {
	for _, tc := range []struct {
		name    string
		r       io.Reader
		size    int64
		want    string
		wantErr bool
	}{
		{"stream exact", stream{strings.NewReader("hello")}, 5, "hello", false},
		{"stream one byte at a time", iotest.OneByteReader(strings.NewReader("hello")), 5, "hello", false},
		{"stream with data and EOF together", iotest.DataErrReader(strings.NewReader("hello")), 5, "hello", false},
		{"stream empty", stream{strings.NewReader("")}, 0, "", false},
		{"stream short", stream{strings.NewReader("hell")}, 5, "", true},
		{"stream long", stream{strings.NewReader("hello!")}, 5, "", true},
		{"stream long for empty", stream{strings.NewReader("x")}, 0, "", true},
		{"seekable exact", strings.NewReader("hello"), 5, "hello", false},
		{"seekable short", strings.NewReader("hell"), 5, "", true},
		{"seekable long", strings.NewReader("hello!"), 5, "", true},
		{"negative", strings.NewReader(""), -1, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Reader(tc.r, tc.size)
			var got []byte
			if err == nil {
				got, err = io.ReadAll(r)
			}
			if tc.wantErr {
				if !errors.Is(err, objstore.ErrSizeMismatch) {
					t.Errorf("got %q, %v; want ErrSizeMismatch", got, err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestReaderSeekableFromOffset(t *testing.T) {
	br := bytes.NewReader([]byte("0123456789"))
	br.Seek(3, io.SeekStart)
	r, err := Reader(br, 7)
	if err != nil {
		t.Fatal(err)
	}
	sr, ok := r.(*io.SectionReader)
	if !ok {
		t.Fatalf("got %T, want an *io.SectionReader for a seekable io.ReaderAt", r)
	}
	b := make([]byte, 7)
	if _, err := sr.ReadAt(b, 0); err != nil || string(b) != "3456789" {
		t.Errorf("ReadAt(0): got %q, %v; want 3456789", b, err)
	}
	if off, _ := br.Seek(0, io.SeekCurrent); off != 3 {
		t.Errorf("the caller's offset moved to %d, want 3", off)
	}
}

// TestReaderLongFailsBeforeTheLastByte checks that a consumer reading
// exactly size bytes from a longer reader gets the error, even one that,
// like io.ReadFull, drops an error returned with the last bytes: the last
// byte is withheld.
func TestReaderLongFailsBeforeTheLastByte(t *testing.T) {
	for _, chunk := range []int{5, 1} {
		var src io.Reader = stream{strings.NewReader("hello!")}
		if chunk == 1 {
			src = iotest.OneByteReader(src)
		}
		r, _ := Reader(src, 5)
		n, err := io.ReadFull(r, make([]byte, 5))
		if n != 4 || !errors.Is(err, objstore.ErrSizeMismatch) {
			t.Errorf("ReadFull(5) of 6 bytes read %d at a time: got %d, %v; want 4 and ErrSizeMismatch", chunk, n, err)
		}
		if _, err := r.Read(make([]byte, 1)); !errors.Is(err, objstore.ErrSizeMismatch) {
			t.Errorf("Read after the error: got %v, want it again", err)
		}
	}
}
