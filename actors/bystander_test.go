package actors_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
)

// stuck reads "in" and processes nothing until release is closed: a
// subscriber that acknowledges nothing, like one failing and in backoff.
type stuck struct {
	release chan struct{}
	seen    *atomic.Int64
}

func (s *stuck) Metadata() core.Metadata {
	return core.Metadata{Name: "stuck", Inputs: []core.Input{{Stream: "in"}}}
}

func (s *stuck) Init(core.Context) error { return nil }

func (s *stuck) ProcessRecord(core.Context, core.Record) error {
	<-s.release
	s.seen.Add(1)
	return nil
}

func (s *stuck) ProcessTimer(core.Context, string, time.Time) error { return nil }

// bystanderWindow is fewer records than the stuck subscriber's credit
// window with the default Config, (Credits+BufferBatches)×BatchSize (for
// Node.Produce, whose batches in flight may hold one record each:
// Credits + BufferBatches×BatchSize = 2,056).
const bystanderWindow = 2000

// startBystander starts a node where "stuck" and "bystander" read "in",
// with the further operators; it releases stuck at cleanup.
func startBystander(t *testing.T, more ...core.Factory) (n *actors.Node, s *stuck, bystander *sluicetest.Collector) {
	t.Helper()
	s = &stuck{release: make(chan struct{}), seen: &atomic.Int64{}}
	bystander = &sluicetest.Collector{}
	ops := append([]core.Factory{
		func() core.Operator { return &stuck{release: s.release, seen: s.seen} },
		func() core.Operator {
			return &sluicetest.Sink{Name: "bystander", Inputs: []core.Input{{Stream: "in"}}, Into: bystander}
		},
	}, more...)
	n = startNode(t, t.TempDir(), ops...)
	t.Cleanup(func() {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
	})
	return n, s, bystander
}

// TestStuckSubscriberDoesNotStallABystander: a subscriber that does not
// acknowledge holds back only its own records, up to its credit window;
// another reader of the same stream from a source gets them all meanwhile
// (issue 10, item 9).
func TestStuckSubscriberDoesNotStallABystander(t *testing.T) {
	n, s, bystander := startBystander(t, func() core.Operator {
		return &sluicetest.Gen{Name: "gen", Stream: "in", Count: bystanderWindow, Batch: 100, Key: sluicetest.Key(10)}
	})
	sluicetest.WaitFor(t, 30*time.Second, "the bystander to get every record", func() bool { return bystander.Len() == bystanderWindow })
	if got := s.seen.Load(); got != 0 {
		t.Fatalf("the stuck subscriber processed %d records", got)
	}
	close(s.release)
	sluicetest.WaitFor(t, 30*time.Second, "the stuck subscriber to catch up", func() bool { return s.seen.Load() == bystanderWindow })
	stop(t, n)
}

// TestStuckSubscriberDoesNotStallNodeProduce: the same for records from
// outside: Node.Produce returns once a record is buffered within the
// credit window of each destination, rather than once every destination
// took it (it blocked a bystander after 8 records).
func TestStuckSubscriberDoesNotStallNodeProduce(t *testing.T) {
	n, s, bystander := startBystander(t)
	fed := make(chan error, 1)
	go func() {
		for i := range bystanderWindow {
			if err := n.Produce(context.Background(), "in", core.Record{Key: []byte("k"), Value: []byte(strconv.Itoa(i))}); err != nil {
				fed <- err
				return
			}
		}
		fed <- nil
	}()
	sluicetest.WaitFor(t, 30*time.Second, "the bystander to get every record", func() bool { return bystander.Len() == bystanderWindow })
	if err := <-fed; err != nil {
		t.Fatal(err)
	}
	if got := s.seen.Load(); got != 0 {
		t.Fatalf("the stuck subscriber processed %d records", got)
	}
	close(s.release)
	// Stop delivers what Node.Produce buffered before the node stops.
	stop(t, n)
	if got := s.seen.Load(); got != bystanderWindow {
		t.Fatalf("the stuck subscriber processed %d records by Stop, want %d", got, bystanderWindow)
	}
}
