package nexmark_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/samples/nexmark"
	"github.com/sluicehq/sluice/sdk"
)

// collector is a sink of q5-hot-items answers.
type collector struct {
	mu   sync.Mutex
	got  map[int64]string
	dups int
}

func (c *collector) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "q5-sink", Inputs: []sdk.Input{{Stream: nexmark.Q5HotItems}}}
}
func (c *collector) Init(sdk.Context) error { return nil }
func (c *collector) ProcessRecord(_ sdk.Context, rec sdk.Record) error {
	end, h, err := nexmark.Q5Result(rec)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.got[end.UnixNano()]; ok {
		c.dups++
	}
	c.got[end.UnixNano()] = h.String()
	return nil
}
func (c *collector) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

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
			sink := &collector{got: map[int64]string{}}
			rt, err := sdk.Start(context.Background(), sdk.Config{NodeConfig: sdk.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, CheckpointInterval: 200 * time.Millisecond},
				append(fs, func() sdk.Operator { return sink })...)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Stop(context.Background())
			want := nexmark.Q5Expected(cfg)
			sluicetest.WaitFor(t, 2*time.Minute, "every window answered and the sink finished", func() bool {
				sink.mu.Lock()
				n := len(sink.got)
				sink.mu.Unlock()
				for _, st := range rt.Status() {
					if st.Name == "q5-sink" {
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
			for end, w := range want {
				if sink.got[end] != w.String() {
					t.Errorf("window ending %v: got %q, want %q", time.Unix(0, end).UTC(), sink.got[end], w)
				}
			}
		})
	}
}
