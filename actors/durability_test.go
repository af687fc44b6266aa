package actors_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors"
	"github.com/sluicehq/sluice/internal/core"
	"github.com/sluicehq/sluice/internal/sluicetest"
	tpebble "github.com/sluicehq/sluice/topology/pebble"
)

// replay is a replayable source of n numbered records; it records the
// positions the runtime reports durable and can be rewound.
type replay struct {
	n        int
	next     int
	durable  *atomic.Int64 // highest durable position seen
	rewinds  *atomic.Int64
	lastSafe int
	check    func(pos int) // called with each durable position
}

func (r *replay) Metadata() core.Metadata { return core.Metadata{Name: "src", Outputs: []string{"a"}} }
func (r *replay) Init(core.Context) error {
	r.next = int(r.durable.Load())
	r.lastSafe = r.next
	return nil
}
func (r *replay) Poll(ctx core.Context) error {
	for i := 0; i < 50 && r.next < r.n; i++ {
		if err := ctx.Produce("a", core.Record{Key: []byte(strconv.Itoa(r.next % 7)), Value: []byte(strconv.Itoa(r.next))}); err != nil {
			return err
		}
		r.next++
	}
	return nil
}
func (r *replay) Position() any { return r.next }
func (r *replay) Durable(_ core.Context, pos any) {
	p := pos.(int)
	if r.check != nil {
		r.check(p)
	}
	r.lastSafe = p
	if int64(p) > r.durable.Load() {
		r.durable.Store(int64(p))
	}
}
func (r *replay) Rewind(core.Context) error {
	r.rewinds.Add(1)
	r.next = r.lastSafe
	return nil
}
func (r *replay) ProcessRecord(core.Context, core.Record) error      { return nil }
func (r *replay) ProcessTimer(core.Context, string, time.Time) error { return nil }

// flushSink is a sink whose output is durable only after Flush.
type flushSink struct {
	mu      *sync.Mutex
	buffer  *[]string
	flushed *map[string]int
}

func (s flushSink) Metadata() core.Metadata {
	return core.Metadata{Name: "sink", Inputs: []core.Input{{Stream: "b"}}}
}
func (flushSink) Init(core.Context) error { return nil }
func (s flushSink) ProcessRecord(_ core.Context, rec core.Record) error {
	s.mu.Lock()
	*s.buffer = append(*s.buffer, string(rec.Value))
	s.mu.Unlock()
	return nil
}
func (s flushSink) Flush(core.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range *s.buffer {
		(*s.flushed)[v]++
	}
	*s.buffer = (*s.buffer)[:0]
	return nil
}
func (flushSink) ProcessTimer(core.Context, string, time.Time) error { return nil }

func TestDurablePositionsFollowDownstreamCommits(t *testing.T) {
	const n = 5000
	durable, rewinds := &atomic.Int64{}, &atomic.Int64{}
	var mu sync.Mutex
	var buffer []string
	flushed := map[string]int{}
	var early atomic.Int64 // records reported durable before the sink flushed them
	check := func(pos int) {
		mu.Lock()
		defer mu.Unlock()
		for i := 0; i < pos; i++ {
			if flushed[strconv.Itoa(i)] == 0 {
				early.Add(1)
			}
		}
	}
	node, err := actors.Start(context.Background(), actors.Config{LocalStore: tpebble.Local, DataDir: t.TempDir(), NoSync: true, AtLeastOnce: true,
		CommitInterval: 20 * time.Millisecond, Logger: sluicetest.Logger(t)},
		func() core.Operator { return &replay{n: n, durable: durable, rewinds: rewinds, check: check} },
		func() core.Operator { return relay{name: "mid", in: "a", out: "b"} },
		func() core.Operator { return flushSink{mu: &mu, buffer: &buffer, flushed: &flushed} },
	)
	sluicetest.Must(t, err)
	defer stop(t, node)
	// The source's durable position reaches the end, and by then every
	// record has been flushed by the sink: durable means flushed.
	sluicetest.WaitFor(t, 30*time.Second, "the source's position to become durable", func() bool { return durable.Load() == n })
	if early.Load() != 0 {
		t.Fatalf("%d records were reported durable before the sink flushed them", early.Load())
	}
}
