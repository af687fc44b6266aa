package creds

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWatcherStops checks that Close stops the watcher's goroutine and
// waits for it, and that a closed source cannot watch again.
func TestWatcherStops(t *testing.T) {
	a, err := NewCA("ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, a.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Load(Config{CAFile: p, PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Watch(); err != nil {
		t.Fatal(err)
	}
	if err := s.Watch(); err != nil { // twice is fine
		t.Fatal(err)
	}
	w := s.w
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.done:
	default:
		t.Fatal("Close returned before the watcher's goroutine ended")
	}
	if err := s.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := s.Watch(); err == nil {
		t.Fatal("Watch after Close succeeded")
	}
}
