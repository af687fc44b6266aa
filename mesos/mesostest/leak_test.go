package mesostest_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/sluicehq/sluice/mesos/mesostest"
)

// TestCloseStopsGoroutines checks that Close stops every goroutine the
// master started (HTTP server, stream handlers, housekeeping, process
// supervisors) while a subscription is open and a task runs.
func TestCloseStopsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	m, err := mesostest.New(mesostest.Config{Logf: t.Logf, AllocationInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AddAgent("a1", 1, 512, 0); err != nil {
		t.Fatal(err)
	}
	s := subscribe(t, m, protobufCodec, fwInfo("leak"))
	s.runSleep("a1", "t")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	s.waitEnded()
	// Client-side connection goroutines end asynchronously once the
	// server closed the connections: poll with a deadline.
	deadline := time.Now().Add(waitTimeout)
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		<-ticker.C
	}
}
