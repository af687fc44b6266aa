package node_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// get answers GET url: status code and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// A cluster node whose data directory (a 64 MiB tmpfs) fills up says so
// everywhere: GET /healthz answers 503 with the reason, GET /v1/node and
// /v1/status say the disk is full, /metrics has sluice_node_healthy 0, and
// its Consul check fails (warning) with the reason as output. It takes no
// work meanwhile, and when the space is freed it is healthy again and
// every record arrives exactly once.
func TestDiskFullNodeReportsUnhealthyAndRecovers(t *testing.T) {
	agent := consultest.Start(t)
	dir := sluicetest.Tmpfs(t, 64<<20)
	const records = 50_000
	into := &sluicetest.Collector{}
	var full atomic.Bool
	service := fmt.Sprintf("sluice-disk-%d", time.Now().UnixNano())
	rt, err := node.Start(context.Background(), node.Config{
		NodeConfig: node.NodeConfig{NodeID: "n1", DataDir: dir, NoSync: true, MinFreeDisk: 8 << 20, Logger: sluicetest.Logger(t)},
		Consul:     agent.Addr(), ClusterName: service, NodeSecurity: &node.NodeSecurity{Insecure: true}, HTTP: "127.0.0.1:0", Guarantee: sdk.NoGuarantee,
	},
		func() sdk.Operator {
			// The second half waits for the full disk: the pause comes
			// mid-stream however fast the first half goes.
			return &sluicetest.Gen{Name: "gen", Stream: "words", Count: records, Key: sluicetest.Key(100), Batch: 50,
				Gate: func(i int) bool { return i < records/2 || full.Load() }}
		},
		func() sdk.Operator {
			return &sluicetest.Sink{Name: "sink", Inputs: []sdk.Input{{Stream: "words", Routing: sdk.GroupBy}}, Parallelism: 2, Into: into}
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Stop(ctx)
	})
	base := "http://" + rt.HTTPAddr()
	if code, body := get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz at start: %d %q, want 200 ok", code, body)
	}
	sluicetest.WaitFor(t, time.Minute, "first records delivered", func() bool { return into.Len() > 0 })

	filler := sluicetest.FillDisk(t, dir, 4<<20)
	var body string
	sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "/healthz 503", func() bool {
		var code int
		code, body = get(t, base+"/healthz")
		return code == http.StatusServiceUnavailable
	})
	full.Store(true)
	if !strings.HasPrefix(body, "unhealthy: disk full: ") || !strings.Contains(body, dir) {
		t.Fatalf("/healthz on a full disk: %q, want the reason (disk full on %s)", body, dir)
	}
	_, node := get(t, base+"/v1/node")
	if !strings.Contains(node, `"healthy": false`) || !strings.Contains(node, `"cause": "disk-full"`) {
		t.Fatalf("/v1/node on a full disk does not say so:\n%s", node)
	}
	_, status := get(t, base+"/v1/status")
	if !strings.Contains(status, "node n1 is unhealthy, taking no work: disk full") {
		t.Fatalf("/v1/status on a full disk does not say so:\n%s", status)
	}
	_, metrics := get(t, base+"/metrics")
	if !strings.Contains(metrics, `sluice_node_healthy{`) || !strings.Contains(metrics, `sluice_node_health_cause="disk-full"`) {
		t.Fatalf("/metrics on a full disk: no sluice_node_healthy 0 with cause disk-full:\n%s", grepLines(metrics, "sluice_node_"))
	}
	checkID := service + "-n1:ttl"
	check := func() *api.HealthCheck {
		checks, _, err := agent.Client().Health().Checks(service, nil)
		if err != nil {
			t.Fatalf("Consul checks: %v", err)
		}
		for _, c := range checks {
			if c.CheckID == checkID {
				return c
			}
		}
		return &api.HealthCheck{Status: "absent"}
	}
	sluicetest.WaitEvery(t, 10*time.Second, 50*time.Millisecond, "Consul check failing", func() bool {
		c := check()
		return c.Status == api.HealthWarning && strings.Contains(c.Output, "disk full")
	})
	t.Logf("Consul check output: %s", check().Output)
	delivered := into.Len()
	if delivered >= records {
		t.Fatalf("all %d records delivered before the disk filled", records)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitEvery(t, 10*time.Second, 20*time.Millisecond, "/healthz 200", func() bool {
		code, _ := get(t, base+"/healthz")
		return code == http.StatusOK
	})
	sluicetest.WaitEvery(t, 10*time.Second, 50*time.Millisecond, "Consul check passing", func() bool { return check().Status == api.HealthPassing })
	sluicetest.WaitFor(t, time.Minute, "every record delivered", func() bool { return into.Len() >= records })
	seen := make(map[string]int, records)
	for _, d := range into.All() {
		seen[string(d.Record.Value)]++
	}
	for i := range records {
		if n := seen[fmt.Sprint(i)]; n != 1 {
			t.Fatalf("record %d delivered %d times (paused after %d of %d)", i, n, delivered, records)
		}
	}
	if into.Len() != records {
		t.Fatalf("%d deliveries of %d records", into.Len(), records)
	}
	_, metrics = get(t, base+"/metrics")
	if !strings.Contains(metrics, "sluice_node_healthy 1") && !strings.Contains(metrics, "sluice_node_healthy{") {
		t.Fatalf("/metrics after recovery:\n%s", grepLines(metrics, "sluice_node_"))
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
