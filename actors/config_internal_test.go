package actors

import (
	"testing"
	"time"
)

// TestCommitIntervalDefaults checks the commit interval a node gets: 200 ms
// without checkpoints; under exactly-once the checkpoint interval, at most
// MaxExactlyOnceCommitInterval; a value set is kept either way.
func TestCommitIntervalDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want time.Duration
	}{
		{"no guarantee", Config{}, 200 * time.Millisecond},
		{"at-least-once", Config{AtLeastOnce: true}, 200 * time.Millisecond},
		{"exactly-once, default checkpoints", Config{Checkpoints: &CheckpointConfig{}}, time.Second},
		{"exactly-once, frequent checkpoints", Config{Checkpoints: &CheckpointConfig{Interval: 300 * time.Millisecond}}, 300 * time.Millisecond},
		{"exactly-once, rare checkpoints", Config{Checkpoints: &CheckpointConfig{Interval: time.Minute}}, MaxExactlyOnceCommitInterval},
		{"set", Config{CommitInterval: 50 * time.Millisecond}, 50 * time.Millisecond},
		{"set, exactly-once", Config{CommitInterval: 50 * time.Millisecond, Checkpoints: &CheckpointConfig{}}, 50 * time.Millisecond},
	} {
		if got := tc.cfg.withDefaults().CommitInterval; got != tc.want {
			t.Errorf("%s: CommitInterval %v, want %v", tc.name, got, tc.want)
		}
	}
}
