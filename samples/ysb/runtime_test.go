package ysb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/samples/ysb"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/topology"
)

// start runs the pipeline on an embedded runtime.
func start(t *testing.T, operators func(ysb.Config, *ysb.Results) ([]sdk.Factory, error), cfg ysb.Config, res *ysb.Results) *node.Runtime {
	t.Helper()
	fs, err := operators(cfg, res)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, CheckpointInterval: 200 * time.Millisecond}, fs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	return rt
}

// waitAll waits until every sink instance has finished (end-of-stream
// reached it: nothing more will come) and the sink has at least as many
// results as expected.
func waitAll(t *testing.T, rt *node.Runtime, cfg ysb.Config, res *ysb.Results) {
	t.Helper()
	want := len(ysb.Expected(cfg))
	sluicetest.WaitFor(t, 2*time.Minute, fmt.Sprintf("%d window counts at the sink, and the sink finished", want), func() bool {
		if _, _, n := res.Snapshot(); n < int64(want) {
			return false
		}
		for _, st := range rt.Status() {
			if st.Name != ysb.SinkName {
				continue
			}
			for _, in := range st.Instances {
				if !in.Finished {
					return false
				}
			}
			return len(st.Instances) > 0
		}
		return false
	})
}

// TestRuntimeExact runs YSB, hand-written and typed, on the runtime with
// parallelism 1 and 4 on every stage: the sources' watermarks close the
// windows, end-of-stream closes the last ones, and the sink's counts are
// exactly the expected ones, each window once.
func TestRuntimeExact(t *testing.T) {
	for _, b := range builds {
		for _, p := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/parallelism-%d", b.name, p), func(t *testing.T) {
				cfg := ysb.Config{Events: 20000, EventsPerSecond: 1000, Seed: 11, Parallelism: p}
				res := ysb.NewResults()
				rt := start(t, b.operators, cfg, res)
				waitAll(t, rt, cfg, res)
				check(t, cfg, res)
			})
		}
	}
}

// TestRuntimeExactAcrossRescale rescales the parse and window stages (of
// both versions) from 1 to 4 instances while windows are open (their
// accumulators and event timers move with their key groups); the answer
// stays exact.
func TestRuntimeExactAcrossRescale(t *testing.T) {
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) { rescale(t, b.operators, b.windows) })
	}
}

func rescale(t *testing.T, operators func(ysb.Config, *ysb.Results) ([]sdk.Factory, error), windows string) {
	cfg := ysb.Config{Events: 30000, EventsPerSecond: 1000, Seed: 5, Parallelism: 1, Rate: 6000, Batch: 200}
	res := ysb.NewResults()
	rt := start(t, operators, cfg, res)
	sluicetest.WaitFor(t, time.Minute, "the first windows closed", func() bool {
		_, _, n := res.Snapshot()
		return n > 0
	})
	if _, _, n := res.Snapshot(); n >= int64(len(ysb.Expected(cfg))) {
		t.Fatal("the run ended before the rescale")
	}
	scaled := cfg
	scaled.Parallelism, scaled.SourceParallelism = 4, 1
	fs, err := operators(scaled, res)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		meta := f().Metadata()
		if meta.Name == ysb.SourceName || meta.Name == ysb.SinkName {
			continue // rescale parse (views) and windows
		}
		_, err := topology.Update(context.Background(), rt.Node().Store(), 5, func(cur topology.Topology) (topology.Topology, error) {
			next, _, err := cur.Deploy(topology.OperatorSpec{Kind: meta.Name, Meta: meta}, time.Now())
			return next, err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sluicetest.WaitFor(t, time.Minute, "4 running window instances", func() bool {
		running := 0
		for _, st := range rt.Status() {
			if st.Name == windows {
				for _, in := range st.Instances {
					if in.State == status.StateRunning {
						running++
					}
				}
			}
		}
		return running == 4
	})
	waitAll(t, rt, cfg, res)
	check(t, cfg, res)
}
