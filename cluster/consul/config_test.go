package consul

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // substring; "" means valid
	}{
		{"zero value", Config{}, ""},
		{"defaults", DefaultConfig(), ""},
		{"custom", Config{Service: "orders-prod", TTL: 10 * time.Second, HeartbeatInterval: 2 * time.Second, RetryMax: 5 * time.Second}, ""},
		{"service with dot", Config{Service: "a.b"}, "Service"},
		{"service too long", Config{Service: strings.Repeat("s", 64)}, "Service"},
		{"negative TTL", Config{TTL: -time.Second}, "TTL"},
		{"heartbeat too slow", Config{TTL: 3 * time.Second, HeartbeatInterval: 2 * time.Second}, "HeartbeatInterval"},
		{"deregister below Consul minimum", Config{DeregisterCriticalServiceAfter: 30 * time.Second}, "DeregisterCriticalServiceAfter"},
		{"retry bounds swapped", Config{RetryMin: 3 * time.Second, RetryMax: time.Second}, "RetryMin"},
		{"retry max above TTL", Config{RetryMax: 10 * time.Second}, "RetryMax"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("got %v, want an error naming %s", err, tc.wantErr)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c := DefaultConfig()
	if c.TTL != 3*time.Second || c.HeartbeatInterval != time.Second || c.DeregisterCriticalServiceAfter != time.Minute {
		t.Errorf("timings: got TTL %v heartbeat %v deregister %v, want 3s 1s 1m", c.TTL, c.HeartbeatInterval, c.DeregisterCriticalServiceAfter)
	}
	if c.RecoveryGrace != c.TTL+c.RetryMax {
		t.Errorf("RecoveryGrace: got %v, want TTL+RetryMax = %v", c.RecoveryGrace, c.TTL+c.RetryMax)
	}
	if c.Service != "sluice" || c.Address != "127.0.0.1:8500" || c.Logger == nil {
		t.Errorf("got Service %q Address %q Logger %v", c.Service, c.Address, c.Logger)
	}
}

func TestRetryBackoff(t *testing.T) {
	lo, hi := 200*time.Millisecond, 2*time.Second
	d := &Discovery{cfg: Config{RetryMin: lo, RetryMax: hi}}
	for range 20 {
		b := d.retryBackoff()
		for n := 1; n <= 40; n++ {
			want := min(hi, lo<<min(n-1, 20))
			if got := b.Next(); got < want/2 || got > min(want*3/2+1, hi) {
				t.Fatalf("retry %d: got %v, want %v ± 50%%, at most RetryMax %v", n, got, want, hi)
			}
		}
	}
}
