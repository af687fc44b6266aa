package transport

import "testing"

func TestSpeaksFor(t *testing.T) {
	for _, c := range []struct {
		identity, node string
		want           bool
	}{
		{"n1", "n1", true},
		{"n1", "n2", false},
		{"n1", "count-n1-0", true}, // an operator process n1's launcher started
		{"n1", "count-n1-17", true},
		{"n1", "word-count-n1-3", true},
		{"n1", "count-n2-0", false},
		{"n1", "-n1-0", false},
		{"n1", "count-n1-", false},
		{"n1", "count-n1-x", false},
		{"n1", "count-xn1-0", false},
		{"n1", "n1-0", false},
		{"", "", false},
		{"", "x--0", false},
	} {
		if got := SpeaksFor(c.identity, c.node); got != c.want {
			t.Errorf("SpeaksFor(%q, %q) = %v, want %v", c.identity, c.node, got, c.want)
		}
	}
}
