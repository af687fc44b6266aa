package backoff

import (
	"context"
	"testing"
	"time"
)

func TestNextDoublesToMax(t *testing.T) {
	b := New(100*time.Millisecond, time.Second, 0)
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := b.Next(); got != w*time.Millisecond {
			t.Fatalf("delay %d: got %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
	b.Reset()
	if got := b.Next(); got != 100*time.Millisecond {
		t.Fatalf("after Reset: got %v, want 100ms", got)
	}
}

func TestNextJitterStaysInBoundsAndCapped(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, time.Second
	b := New(lo, hi, 0.5)
	base := lo
	varied := false
	for i := range 200 {
		d := b.Next()
		low := time.Duration(float64(base) * 0.5)
		if d < low || d > hi {
			t.Fatalf("delay %d: got %v, want in [%v, %v]", i+1, d, low, hi)
		}
		if d != base {
			varied = true
		}
		base = min(2*base, hi)
	}
	if !varied {
		t.Fatal("200 jittered delays all equal the unjittered ones")
	}
}

func TestNth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		lo, hi time.Duration
		want   time.Duration
	}{
		{"zero counts as first", 0, time.Second, time.Minute, time.Second},
		{"first", 1, time.Second, time.Minute, time.Second},
		{"second doubles", 2, time.Second, time.Minute, 2 * time.Second},
		{"fourth", 4, time.Second, time.Minute, 8 * time.Second},
		{"last below the cap", 5, time.Second, 30 * time.Second, 16 * time.Second},
		{"capped", 6, time.Second, 30 * time.Second, 30 * time.Second},
		{"far beyond the cap", 1 << 20, time.Second, 30 * time.Second, 30 * time.Second},
		{"min is max", 3, time.Second, time.Second, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Nth(tc.n, tc.lo, tc.hi); got != tc.want {
				t.Errorf("Nth(%d, %v, %v): got %v, want %v", tc.n, tc.lo, tc.hi, got, tc.want)
			}
		})
	}
}

func TestJitteredAtTheCapStaysInItsUpperHalf(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, time.Second
	b := New(lo, hi, 0.5)
	for range 10 {
		b.Next()
	}
	for i := range 20 {
		if d := b.Next(); d < hi/2 || d > hi {
			t.Fatalf("delay %d at the cap: got %v, want in [%v, %v]", i, d, hi/2, hi)
		}
	}
}

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep with a live context: got false, want true")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep with an ended context: got true, want false")
	}
}
