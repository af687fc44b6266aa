package consul

import "errors"

// errCrash is the heartbeat's cancellation cause when a test crashes it.
var errCrash = errors.New("consul: test crash")

// Crash is a test hook: it stops the heartbeat without deregistering, as
// SIGKILL would, and returns once the heartbeat goroutine has returned.
// The member stays in the catalog until its TTL check turns critical.
// Leave then only stops the watchers.
func (d *Discovery) Crash() {
	d.mu.Lock()
	stop, done := d.hbStop, d.hbDone
	d.hbStop = nil // abandoned: Leave must not deregister
	d.mu.Unlock()
	if stop != nil {
		stop(errCrash)
		<-done
	}
}
