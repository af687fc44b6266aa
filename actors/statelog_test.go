package actors_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// flakyLog is a state log that fails transiently while down, and keeps
// what it accepts.
type flakyLog struct {
	down atomic.Bool
	mu   sync.Mutex
	keys map[string]bool
}

func (l *flakyLog) Append(_ context.Context, _ string, _ int, kvs []core.KV) error {
	if l.down.Load() {
		return fmt.Errorf("%w: log brokers unreachable", core.ErrTransient)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, kv := range kvs {
		l.keys[string(kv.Key)] = true
	}
	return nil
}

func (l *flakyLog) Restore(context.Context, string, int, int, int, func(core.KV) error) error {
	return nil
}

func (l *flakyLog) logged() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// A state log that is down is a transient failure of the instances whose
// commits it refuses: counted in their status (and so in the
// sluice.operator.transient_errors metric) as a source's failing Poll is,
// and retried until the log takes every write.
func TestStateLogOutageCountsAsTransient(t *testing.T) {
	const records, keys = 2000, 50
	log := &flakyLog{keys: make(map[string]bool)}
	log.down.Store(true)
	gen := func() core.Operator {
		return &sluicetest.Gen{Name: "gen", Stream: "words", Count: records, Key: sluicetest.Key(keys), Batch: 100}
	}
	cnt := func() core.Operator { return &counter{name: "count", input: "words", parallelism: 1} }
	n, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, NodeID: "n1", DataDir: t.TempDir(), NoSync: true,
		Logger: sluicetest.Logger(t), AtLeastOnce: true, StateLog: log}, gen, cnt)
	sluicetest.Must(t, err)
	t.Cleanup(func() { _ = n.Stop(context.Background()) })

	var last string
	sluicetest.WaitFor(t, time.Minute, "the counter's state log failures counted as transient", func() bool {
		for _, op := range n.Status() {
			for _, in := range op.Instances {
				if op.Name == "count" && in.TransientErrors > 0 {
					last = in.LastError
					return true
				}
			}
		}
		return false
	})
	if !strings.Contains(last, "state log") || !strings.Contains(last, "unreachable") {
		t.Fatalf("last error %q, want the state log's", last)
	}
	log.down.Store(false)
	sluicetest.WaitFor(t, time.Minute, "every record counted and every key logged once the log is back", func() bool {
		return processed(n, "count") == records && log.logged() >= keys
	})
}
