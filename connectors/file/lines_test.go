package file

import (
	"bufio"
	"errors"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadLine(t *testing.T) {
	type want struct {
		data string
		n    int64
		long bool
		eof  bool
	}
	cases := []struct {
		name  string
		in    string
		limit int
		want  []want
	}{
		{"empty input", "", 10, []want{{"", 0, false, true}}},
		{"lines", "ab\ncd\n", 10, []want{{"ab", 3, false, false}, {"cd", 3, false, false}, {"", 0, false, true}}},
		{"no final newline", "ab\ncd", 10, []want{{"ab", 3, false, false}, {"cd", 2, false, true}}},
		{"empty lines", "\n\n", 10, []want{{"", 1, false, false}, {"", 1, false, false}, {"", 0, false, true}}},
		{"carriage return kept", "ab\r\n", 10, []want{{"ab\r", 4, false, false}, {"", 0, false, true}}},
		{"exactly the limit", "abcd\n", 4, []want{{"abcd", 5, false, false}, {"", 0, false, true}}},
		{"too long", "abcdef\nxy\n", 4, []want{{"abcd", 7, true, false}, {"xy", 3, false, false}, {"", 0, false, true}}},
		{"too long at the end", "abcdefgh", 4, []want{{"abcd", 8, true, true}}},
		{"longer than the buffer", strings.Repeat("z", 40) + "\nq\n", 100, []want{{strings.Repeat("z", 40), 41, false, false}, {"q", 2, false, false}, {"", 0, false, true}}},
		{"too long across the buffer", strings.Repeat("z", 40) + "\nq\n", 20, []want{{strings.Repeat("z", 20), 41, true, false}, {"q", 2, false, false}, {"", 0, false, true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A 16-byte buffer (bufio's minimum) and one-byte reads make
			// lines span many fills.
			r := bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(c.in)), 16)
			for i, w := range c.want {
				l, err := readLine(r, c.limit)
				if err != nil {
					t.Fatalf("line %d: %v", i, err)
				}
				got := want{string(l.data), l.n, l.long, l.eof}
				if got != w {
					t.Fatalf("line %d: got %+v, want %+v", i, got, w)
				}
			}
		})
	}
}

func TestReadLineError(t *testing.T) {
	boom := errors.New("boom")
	r := bufio.NewReaderSize(iotest.TimeoutReader(strings.NewReader(strings.Repeat("a", 32))), 16)
	_, err := readLine(r, 100)
	if !errors.Is(err, iotest.ErrTimeout) {
		t.Fatalf("got %v, want %v", err, iotest.ErrTimeout)
	}
	r = bufio.NewReader(iotest.ErrReader(boom))
	if _, err := readLine(r, 100); !errors.Is(err, boom) {
		t.Fatalf("got %v, want %v", err, boom)
	}
}
