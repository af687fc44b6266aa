package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/actors/tail"
	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// TestTailAgainstARunningNode: sluice tail prints the records produced
// while it runs, as text or --json, stops after -n and removes its reader;
// an unknown stream fails with the node's message.
func TestTailAgainstARunningNode(t *testing.T) {
	rt, err := node.Start(context.Background(), node.Config{
		NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0",
		Deploy: []string{"count"}},
		testkinds.Gen(0, 100, 0, 1), testkinds.CounterFactory(2, false))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(context.Background())
	addr := rt.HTTPAddr()

	if code, _, errOut := cli(t, addr, "tail", "nope"); code != exitError || !strings.Contains(errOut, `no stream "nope"`) {
		t.Fatalf("tail of an unknown stream: exit %d, %s", code, errOut)
	}
	if code, _, errOut := cli(t, addr, "tail", "words", "-n", "-1"); code != exitUsage || !strings.Contains(errOut, "-n") {
		t.Fatalf("tail -n -1: exit %d, %s", code, errOut)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tail := func(args ...string) string {
		type result struct {
			code     int
			out, err string
		}
		done := make(chan result, 1)
		go func() {
			code, out, errOut := cli(t, addr, append([]string{"tail", "words", "-n", "2"}, args...)...)
			done <- result{code, out, errOut}
		}()
		sluicetest.WaitFor(t, 30*time.Second, "tail's reader", func() bool { return readers(rt) == 1 })
		for _, rec := range []sdk.Record{{Key: []byte("k1"), Value: []byte("one"), EventTime: at}, {Key: []byte{0xff}, Value: []byte("two")}, {Value: []byte("three")}} {
			if err := rt.Produce(context.Background(), "words", rec); err != nil {
				t.Fatal(err)
			}
		}
		r := <-done
		if r.code != 0 {
			t.Fatalf("tail %v: exit %d\n%s%s", args, r.code, r.out, r.err)
		}
		sluicetest.WaitFor(t, 30*time.Second, "tail's reader to be removed", func() bool { return readers(rt) == 0 })
		return r.out
	}
	// The second record's event time is the time Produce took it.
	if out := tail(); !strings.HasPrefix(out, "2026-01-02T03:04:05Z\tk1\tone\n") || !strings.HasSuffix(out, "\tbase64:/w==\ttwo\n") || strings.Count(out, "\n") != 2 {
		t.Fatalf("tail output:\n%q", out)
	}
	out := tail("--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("tail --json printed %d lines, want 2:\n%s", len(lines), out)
	}
	var r api.TailRecord
	if err := json.Unmarshal([]byte(lines[1]), &r); err != nil || r.KeyBase64 != "/w==" || r.Value != "two" {
		t.Fatalf("second --json line %s: %+v %v", lines[1], r, err)
	}
}

// readers counts the deployed subscription readers.
func readers(rt *node.Runtime) int { return len(tail.Readers(rt.Node().Topology())) }
