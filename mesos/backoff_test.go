package mesos

import (
	"testing"
	"time"
)

func TestNthDelay(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		lo, hi time.Duration
		want   time.Duration
	}{
		{"first", 1, time.Second, time.Minute, time.Second},
		{"second doubles", 2, time.Second, time.Minute, 2 * time.Second},
		{"fourth", 4, time.Second, time.Minute, 8 * time.Second},
		{"capped", 10, time.Second, 30 * time.Second, 30 * time.Second},
		{"far beyond the cap", 1 << 20, time.Second, 30 * time.Second, 30 * time.Second},
		{"min is max", 3, time.Second, time.Second, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nthDelay(tc.n, tc.lo, tc.hi); got != tc.want {
				t.Errorf("nthDelay(%d, %v, %v) = %v, want %v", tc.n, tc.lo, tc.hi, got, tc.want)
			}
		})
	}
}

func TestJitteredStaysWithinBounds(t *testing.T) {
	lo, hi := 100*time.Millisecond, time.Second
	b := jittered(lo, hi)
	for i := 0; i < 200; i++ {
		if i == 100 {
			b.Reset()
		}
		d := b.Next()
		if d < lo/2 || d > hi {
			t.Fatalf("delay %d = %v, want within [%v, %v]", i, d, lo/2, hi)
		}
	}
	// Once at the cap the delays stay in its upper half.
	for i := 0; i < 20; i++ {
		if d := b.Next(); i > 10 && d < hi/2 {
			t.Fatalf("delay at the cap = %v, want at least %v", d, hi/2)
		}
	}
}
