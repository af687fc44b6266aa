package ysb

import (
	"regexp"
	"testing"
)

func TestUUIDShape(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	if got := uuid(0x0123456789abcdef, 0xfedcba9876543210); got != "01234567-89ab-cdef-fedc-ba9876543210" {
		t.Fatalf("got %s", got)
	}
	for i := range uint64(100) {
		if u := uuid(mix(1, i), mix(2, i)); !re.MatchString(u) {
			t.Fatalf("%q is not UUID-shaped", u)
		}
	}
}

// The generator source's path writes the same JSON as Event(i).AppendJSON.
func TestAppendEventJSONIsEventJSON(t *testing.T) {
	for _, seed := range []uint64{0, 1, 0xdeadbeef} {
		g := Config{Seed: seed}.WithDefaults().Generator()
		for i := range int64(2000) {
			e := g.Event(i)
			got, at := g.AppendEventJSON(nil, i)
			if want := e.AppendJSON(nil); string(got) != string(want) || at != e.EventTime {
				t.Fatalf("seed %d event %d:\n got %s (%d)\nwant %s (%d)", seed, i, got, at, want, e.EventTime)
			}
		}
	}
}

func BenchmarkGenerate(b *testing.B) {
	g := Config{}.WithDefaults().Generator()
	buf := make([]byte, 0, 256)
	b.Run("Event.AppendJSON", func(b *testing.B) {
		for i := range b.N {
			buf = g.Event(int64(i)).AppendJSON(buf[:0])
		}
	})
	b.Run("AppendEventJSON", func(b *testing.B) {
		for i := range b.N {
			buf, _ = g.AppendEventJSON(buf[:0], int64(i))
		}
	})
}
