package nexmark_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/samples/nexmark"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// collector is a sink of a query's answers, each decoded to a key (q5: the
// window end; q8: the person and window) and an answer.
type collector struct {
	name, stream string
	decode       func(sdk.Record) (key, answer string, err error)
	mu           sync.Mutex
	got          map[string]string
	dups         int
}

func (c *collector) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: c.name, Inputs: []sdk.Input{{Stream: c.stream}}}
}
func (c *collector) Init(sdk.Context) error { return nil }
func (c *collector) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	k, a, err := c.decode(rec)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.got[k]; ok {
		c.dups++
	}
	c.got[k] = a
	return nil
}
func (c *collector) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// runOnRuntime runs a query's operators and sink on the embedded runtime
// until the sink has want's number of answers and has finished, then
// compares them with want.
func runOnRuntime(t *testing.T, fs []sdk.Factory, sink *collector, want map[string]string) {
	t.Helper()
	sink.got = map[string]string{}
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, CheckpointInterval: 200 * time.Millisecond},
		append(fs, func() sdk.Operator { return sink })...)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(context.Background())
	sluicetest.WaitFor(t, 2*time.Minute, "every answer in and the sink finished", func() bool {
		sink.mu.Lock()
		n := len(sink.got)
		sink.mu.Unlock()
		for _, st := range rt.Status() {
			if st.Name == sink.name {
				return n >= len(want) && len(st.Instances) == 1 && st.Instances[0].Finished
			}
		}
		return false
	})
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if sink.dups > 0 || len(sink.got) != len(want) {
		t.Fatalf("%d answers (%d duplicates), want %d", len(sink.got), sink.dups, len(want))
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if sink.got[k] != want[k] {
			t.Errorf("%s: got %q, want %q", k, sink.got[k], want[k])
		}
	}
}

// TestQ5RuntimeExact runs query 5 on the embedded runtime with parallelism
// 1 and 4 and compares every window's answer with Q5Expected.
func TestQ5RuntimeExact(t *testing.T) {
	for _, p := range []int{1, 4} {
		t.Run(fmt.Sprintf("parallelism-%d", p), func(t *testing.T) {
			cfg := nexmark.Config{Events: 15000, EventsPerSecond: 200, Seed: 3, Parallelism: p}
			fs, err := nexmark.Q5(cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for end, h := range nexmark.Q5Expected(cfg) {
				want["window ending "+time.Unix(0, end).UTC().String()] = h.String()
			}
			runOnRuntime(t, fs, &collector{name: "q5-sink", stream: nexmark.Q5HotItems, decode: func(rec sdk.Record) (string, string, error) {
				end, h, err := nexmark.Q5Result(rec)
				return "window ending " + end.UTC().String(), h.String(), err
			}}, want)
		})
	}
}

// TestQ8RuntimeExact runs query 8 on the embedded runtime with parallelism
// 1 and 4 and compares its answers with Q8Expected.
func TestQ8RuntimeExact(t *testing.T) {
	for _, p := range []int{1, 4} {
		t.Run(fmt.Sprintf("parallelism-%d", p), func(t *testing.T) {
			cfg := nexmark.Config{Events: 40000, EventsPerSecond: 1000, Seed: 3, Parallelism: p}
			fs, err := nexmark.Q8(cfg)
			if err != nil {
				t.Fatal(err)
			}
			key := func(u nexmark.NewUser) string {
				return fmt.Sprintf("person %d in the window from %s", u.Person, u.Start.UTC().Format(time.TimeOnly))
			}
			want := map[string]string{}
			for _, u := range nexmark.Q8Expected(cfg) {
				want[key(u)] = u.Name
			}
			runOnRuntime(t, fs, &collector{name: "q8-sink", stream: nexmark.Q8NewUsers, decode: func(rec sdk.Record) (string, string, error) {
				u, err := nexmark.Q8Result(rec)
				return key(u), u.Name, err
			}}, want)
		})
	}
}
