package consul

import (
	"testing"
	"time"
)

// A heartbeat that runs late because the process was frozen past the TTL
// finds the membership lapsed; one that runs on time after failed
// refreshes (Consul unreachable), or late but within the TTL, does not.
func TestLapsed(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const interval, ttl = time.Second, 3 * time.Second
	for _, c := range []struct {
		name       string
		due, last  time.Duration // before now
		wantLapsed bool
	}{
		{"on time", 0, interval, false},
		{"frozen past the TTL", 4 * time.Second, 5 * time.Second, true},
		{"failed refreshes on time for longer than the TTL", 0, 10 * time.Second, false},
		{"late, within the TTL", 1500 * time.Millisecond, 2500 * time.Millisecond, false},
		{"late by the interval exactly", interval, 4 * time.Second, false},
	} {
		now := t0.Add(10 * time.Second)
		if got := lapsed(now, now.Add(-c.due), now.Add(-c.last), interval, ttl); got != c.wantLapsed {
			t.Errorf("%s: lapsed = %v, want %v", c.name, got, c.wantLapsed)
		}
	}
}
