package ckpt

import (
	"testing"
	"time"
)

// Checkpoints start an interval apart, from start to start, unless one
// took so long that the next would follow it by less than a quarter of
// the interval.
func TestNextCheckpointStart(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	for _, c := range []struct {
		took, want time.Duration // from t0
	}{
		{took: 0, want: time.Second},
		{took: 100 * ms, want: time.Second},
		{took: 750 * ms, want: time.Second},
		{took: 900 * ms, want: 1150 * ms},
		{took: 3 * time.Second, want: 3250 * ms},
	} {
		if got := nextStart(t0, t0.Add(c.took), time.Second).Sub(t0); got != c.want {
			t.Errorf("a checkpoint that took %v: the next starts %v after it started, want %v", c.took, got, c.want)
		}
	}
}
