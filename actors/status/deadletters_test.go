package status

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluicehq/sluice/internal/core"
)

// TestDeadLetterLogKeepsTheLatest: a node keeps each operator's latest
// RecentDeadLetters dead letters, newest first, with copies of the key and
// headers and the value cut to its first bytes; a killed operator's go.
func TestDeadLetterLogKeepsTheLatest(t *testing.T) {
	var l DeadLetters
	key := []byte("k")
	for i := range RecentDeadLetters + 3 {
		rec := core.Record{Key: key, Value: []byte(strconv.Itoa(i))}
		l.Add("op", "n1", i%2, rec, []core.Header{{Key: core.HeaderError, Value: "bad " + strconv.Itoa(i)}})
	}
	key[0] = 'x' // the log holds its own copy
	l.Add("other", "n1", 0, core.Record{Value: bytes.Repeat([]byte("v"), 1000)}, nil)
	got := l.Recent("op")
	if len(got) != RecentDeadLetters {
		t.Fatalf("%d dead letters kept, want %d", len(got), RecentDeadLetters)
	}
	for j, dl := range got {
		i := RecentDeadLetters + 2 - j
		if string(dl.Value) != strconv.Itoa(i) || string(dl.Key) != "k" || dl.Index != i%2 || dl.Node != "n1" ||
			len(dl.Headers) != 1 || dl.Headers[0].Value != "bad "+strconv.Itoa(i) {
			t.Fatalf("dead letter %d: %+v, want record %d", j, dl, i)
		}
	}
	if o := l.Recent("other"); len(o) != 1 || len(o[0].Value) != deadLetterValueMax || o[0].ValueBytes != 1000 {
		t.Fatalf("other's dead letter: %d of %d value bytes kept, want %d", len(o[0].Value), o[0].ValueBytes, deadLetterValueMax)
	}
	l.Forget(map[string]*OperatorStatus{"other": {}})
	if len(l.Recent("op")) != 0 || len(l.Recent("other")) != 1 {
		t.Fatal("forget kept a killed operator's dead letters or dropped a live one's")
	}
}

// TestDeadLetterLogBoundsEveryField: a dead letter with a 4 MB key, a
// 4 MB error and a thousand 1 MB headers is kept in a few KiB: key and
// value cut to 256 bytes with their lengths, the runtime's headers first
// and at most 32 headers of at most 1 KiB each (a 4.3 MB key made each
// console viewer pull ~25 MB/s).
func TestDeadLetterLogBoundsEveryField(t *testing.T) {
	var l DeadLetters
	huge := strings.Repeat("é", 2<<20) // 4 MiB of two-byte characters
	rec := core.Record{Key: []byte(huge), Value: []byte(huge)}
	for range 1000 {
		rec.Headers = append(rec.Headers, core.Header{Key: huge[:1<<20], Value: huge[:1<<20]})
	}
	l.Add("op", "n1", 0, rec, []core.Header{{Key: core.HeaderError, Value: ClipText(huge, ErrorTextMax)}, {Key: core.HeaderStream, Value: "in"}})
	dl := l.Recent("op")[0]
	size := len(dl.Key) + len(dl.Value)
	for _, h := range dl.Headers {
		size += len(h.Key) + len(h.Value)
		if len(h.Key) > deadLetterHeaderMax+32 || len(h.Value) > deadLetterHeaderMax+32 || !utf8.ValidString(h.Key) || !utf8.ValidString(h.Value) {
			t.Fatalf("a header of %d+%d bytes kept (valid UTF-8: %v), want ≤ %d each, cut at a character", len(h.Key), len(h.Value), utf8.ValidString(h.Value), deadLetterHeaderMax)
		}
	}
	if len(dl.Key) != deadLetterValueMax || dl.KeyBytes != len(huge) || dl.ValueBytes != len(huge) || len(dl.Headers) != deadLetterHeadersMax {
		t.Fatalf("kept %d key bytes of %d, %d headers, want %d and %d", len(dl.Key), dl.KeyBytes, len(dl.Headers), deadLetterValueMax, deadLetterHeadersMax)
	}
	if dl.Headers[0].Key != core.HeaderError || !strings.HasSuffix(dl.Headers[0].Value, "bytes in all)") || dl.Headers[1].Value != "in" {
		t.Fatalf("the runtime's headers are not first: %.80q…", dl.Headers[:2])
	}
	if size > 80<<10 {
		t.Fatalf("a dead letter keeps %d bytes, want ≤ 80 KiB", size)
	}
}

// TestClipText: text is cut at a character boundary and says its length.
func TestClipText(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 3, "abc… (6 bytes in all)"},
		{"ééé", 3, "é… (6 bytes in all)"},
	} {
		if got := ClipText(c.in, c.max); got != c.want {
			t.Errorf("ClipText(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}
