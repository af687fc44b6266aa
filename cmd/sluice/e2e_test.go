package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/internal/testkinds"
	"github.com/sluicehq/sluice/sdk/node"
)

// cli runs the sluice CLI against addr and returns its exit code and output.
func cli(t *testing.T, addr string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(append([]string{"--addr", addr}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// mustCLI runs the CLI and fails the test unless it exits 0.
func mustCLI(t *testing.T, addr string, args ...string) string {
	t.Helper()
	code, out, errOut := cli(t, addr, args...)
	if code != 0 {
		t.Fatalf("sluice %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// TestCLIAgainstARunningNode drives an embedded node through the CLI:
// deploy, ls, graph, scale, describe, kill, redeploy.
func TestCLIAgainstARunningNode(t *testing.T) {
	rt, err := node.Start(context.Background(), node.Config{
		NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0",
		Deploy: []string{"gen"}},
		testkinds.Gen(0, 100, 2000, 1), testkinds.CounterFactory(2, false))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(context.Background())
	addr := rt.HTTPAddr()

	// Only gen runs: words has no consumer.
	if out := mustCLI(t, addr, "graph"); !strings.Contains(out, "gen → words → (no consumer)") {
		t.Fatalf("graph before the deploy:\n%s", out)
	}
	manifest := filepath.Join(t.TempDir(), "count.yaml")
	if err := os.WriteFile(manifest, []byte("name: count\ninstances: 2\ninputs:\n  - stream: words\n    routing: group-by\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := mustCLI(t, addr, "deploy", "-f", manifest); !strings.Contains(out, "deployed count (created)") {
		t.Fatalf("deploy output:\n%s", out)
	}
	// The deploy returns once the operator is placed; its instances report
	// "running" when they have started, so wait on each row.
	var ls string
	sluicetest.WaitFor(t, 10*time.Second, "gen and count to run", func() bool {
		ls = mustCLI(t, addr, "ls")
		return lsRowHas(ls, "gen", "running") && lsRowHas(ls, "count", "running")
	})
	if !strings.Contains(ls, "NAME") {
		t.Fatalf("ls lacks its header:\n%s", ls)
	}
	if out := mustCLI(t, addr, "graph"); !strings.Contains(out, "gen → words → count [group-by]") {
		t.Fatalf("graph after the deploy:\n%s", out)
	}
	if out := mustCLI(t, addr, "graph", "--dot"); !strings.Contains(out, "digraph sluice") || !strings.Contains(out, `"stream:words" -> "op:count"`) {
		t.Fatalf("graph --dot:\n%s", out)
	}
	mustCLI(t, addr, "scale", "count", "4")
	sluicetest.WaitFor(t, 10*time.Second, "4 running instances", func() bool {
		var ov api.OperatorView
		_ = json.Unmarshal([]byte(mustCLI(t, addr, "--json", "describe", "count")), &ov)
		running := 0
		for _, in := range ov.Placement {
			if in.State == "running" {
				running++
			}
		}
		return ov.Instances == 4 && running == 4
	})
	describe := mustCLI(t, addr, "describe", "count")
	for _, want := range []string{"words", "group-by", "running"} {
		if !strings.Contains(describe, want) {
			t.Fatalf("describe lacks %q:\n%s", want, describe)
		}
	}
	// Invalid manifests are refused with every field named.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	_ = os.WriteFile(bad, []byte("name: bad\ninstances: -3\ninputs:\n  - stream: words\n    routing: hash\n"), 0o644)
	if code, _, errOut := cli(t, addr, "deploy", "-f", bad); code == 0 || !strings.Contains(errOut, "instances") || !strings.Contains(errOut, "inputs[0].routing") {
		t.Fatalf("invalid deploy: exit %d\n%s", code, errOut)
	}
	mustCLI(t, addr, "kill", "count")
	if out := mustCLI(t, addr, "ls"); strings.Contains(out, "count") {
		t.Fatalf("ls after kill:\n%s", out)
	}
	if code, _, _ := cli(t, addr, "describe", "count"); code == 0 {
		t.Fatal("describe of a killed operator succeeded")
	}
	if out := mustCLI(t, addr, "deploy", "-f", manifest); !strings.Contains(out, "deployed count (created)") {
		t.Fatalf("redeploy output:\n%s", out)
	}
	status := mustCLI(t, addr, "status")
	if !strings.Contains(status, rt.Node().ID()) {
		t.Fatalf("status does not list the node:\n%s", status)
	}
}

// lsRowHas reports whether the row of operator name in ls output contains want.
func lsRowHas(ls, name, want string) bool {
	for _, line := range strings.Split(ls, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return strings.Contains(line, want)
		}
	}
	return false
}
