package actors

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/internal/core"
)

// TestDeadLetterLogKeepsTheLatest: a node keeps each operator's latest
// RecentDeadLetters dead letters, newest first, with copies of the key and
// headers and the value cut to its first bytes; a killed operator's go.
func TestDeadLetterLogKeepsTheLatest(t *testing.T) {
	var l deadLetterLog
	key := []byte("k")
	for i := range RecentDeadLetters + 3 {
		rec := core.Record{Key: key, Value: []byte(strconv.Itoa(i)), Headers: []core.Header{{Key: core.HeaderError, Value: "bad " + strconv.Itoa(i)}}}
		l.add("op", "n1", i%2, rec)
	}
	key[0] = 'x' // the log holds its own copy
	l.add("other", "n1", 0, core.Record{Value: bytes.Repeat([]byte("v"), 1000)})
	got := l.recent("op")
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
	if o := l.recent("other"); len(o) != 1 || len(o[0].Value) != deadLetterValueMax || o[0].ValueBytes != 1000 {
		t.Fatalf("other's dead letter: %d of %d value bytes kept, want %d", len(o[0].Value), o[0].ValueBytes, deadLetterValueMax)
	}
	l.forget(map[string]*OperatorStatus{"other": {}})
	if len(l.recent("op")) != 0 || len(l.recent("other")) != 1 {
		t.Fatal("forget kept a killed operator's dead letters or dropped a live one's")
	}
}
