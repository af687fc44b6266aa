package kafkawordcount_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/manifest"
	kafkawordcount "github.com/sluicehq/sluice/samples/kafka-wordcount"
	"github.com/sluicehq/sluice/sdk/node"
)

// TestManifestsDeployThePipeline runs a node that only hosts the sample's
// kinds (as cmd/kafka-wordcount -host-only does), deploys the shipped
// manifests/pipeline.yaml through the control API, and checks that the
// pipeline then counts every word of the topic exactly: one operator at a
// time as the file lists them (the source first, as users naturally do),
// in reverse order, and as one change.
func TestManifestsDeployThePipeline(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order func([]api.Manifest) []api.Manifest
		batch bool
	}{
		{"source first", func(ms []api.Manifest) []api.Manifest { return ms }, false},
		{"sink first", func(ms []api.Manifest) []api.Manifest { r := slices.Clone(ms); slices.Reverse(r); return r }, false},
		{"one change", func(ms []api.Manifest) []api.Manifest { return ms }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runManifestPipeline(t, kafkawordcount.Load{Records: 20_000, Vocabulary: 500, PoisonEvery: 5_000}, false, func(rt *node.Runtime, ms []api.Manifest) {
				if tc.batch {
					deployBatch(t, rt, ms)
					return
				}
				for _, m := range tc.order(ms) {
					deployOne(t, rt, m)
				}
			})
		})
	}
}

// TestSourceFirstOverAFullTopic deploys the pipeline source first, one
// operator at a time, over a topic that already holds a million records:
// the source reads at full speed before the counter exists, and every word
// must still be counted exactly (at-least-once holds what has no reader
// yet; see actors/streams.go).
func TestSourceFirstOverAFullTopic(t *testing.T) {
	runManifestPipeline(t, kafkawordcount.Load{Records: 1_000_000, Vocabulary: 5_000, PoisonEvery: 100_000}, true, func(rt *node.Runtime, ms []api.Manifest) {
		for _, m := range ms {
			deployOne(t, rt, m)
		}
	})
}

// runManifestPipeline starts a broker and a host-only node, loads the
// input topic (before deploying when preload is set, else after), deploys
// manifests/pipeline.yaml with deploy and waits for exact counts.
func runManifestPipeline(t *testing.T, load kafkawordcount.Load, preload bool, deploy func(*node.Runtime, []api.Manifest)) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	ctx := context.Background()
	wc := kafkawordcount.Config{Brokers: b.Addrs(), Input: "m.words", Output: "m.counts", DeadLetters: "m.dlq", Group: "m"}
	for topic, parts := range map[string]int32{wc.Input: 6, wc.Output: 6, wc.DeadLetters: 1} {
		if err := b.CreateTopic(ctx, topic, parts, nil); err != nil {
			t.Fatal(err)
		}
	}
	want, poison := load.Counts()
	cl, err := b.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if preload {
		if err := load.Produce(ctx, cl, wc.Input, 0, load.Records, 0); err != nil {
			t.Fatal(err)
		}
	}
	ops, err := kafkawordcount.Operators(wc)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := node.Start(ctx, node.Config{
		NodeConfig: node.NodeConfig{NodeID: "m1", DataDir: t.TempDir(), AtLeastOnce: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
		HTTP:       "127.0.0.1:0", HostOnly: true, Telemetry: &node.TelemetryConfig{},
		// The manifests name an executable: only an authenticated admin may deploy them.
		ControlSecurity: &node.ControlSecurity{Tokens: "admin:" + adminToken},
	}, ops...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rt.Stop(sctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})

	var mu sync.Mutex
	largest := map[string]int64{}
	dead := 0
	out, err := kafkatest.NewTail(b.Addrs(), func(r *kgo.Record) {
		mu.Lock()
		defer mu.Unlock()
		if r.Topic == wc.DeadLetters {
			dead++
			return
		}
		n, err := kafkawordcount.ParseCount(r.Value)
		if err != nil {
			t.Errorf("count %q of %q: %v", r.Value, r.Key, err)
			return
		}
		largest[string(r.Key)] = max(largest[string(r.Key)], n)
	}, wc.Output, wc.DeadLetters)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(out.Close)

	deploy(rt, pipelineManifests(t))
	start := time.Now()
	if !preload {
		if err := load.Produce(ctx, cl, wc.Input, 0, load.Records, 0); err != nil {
			t.Fatal(err)
		}
	}
	sluicetest.WaitEvery(t, 3*time.Minute, 50*time.Millisecond, "every word counted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for w, n := range want {
			if largest[w] != n {
				return false
			}
		}
		return int64(dead) == poison
	})
	mu.Lock()
	defer mu.Unlock()
	for w, n := range largest {
		if n != want[w] {
			t.Errorf("%s counted %d times, want %d", w, n, want[w])
		}
	}
	for _, st := range rt.Node().Streams() {
		if st.Dropped != 0 {
			t.Errorf("stream %s: %d records dropped for want of a reader, want 0", st.Stream, st.Dropped)
		}
	}
	t.Logf("%d words and %d poison records through the manifest-deployed pipeline in %v: counts exact", load.Records-poison, poison, time.Since(start).Round(time.Millisecond))
}

// adminToken is the control API token of the test's node.
const adminToken = "manifest-test-admin-0123456789"

// pipelineManifests reads and checks manifests/pipeline.yaml.
func pipelineManifests(t *testing.T) []api.Manifest {
	t.Helper()
	text, err := os.ReadFile("manifests/pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := manifest.Parse(text)
	if err != nil {
		t.Fatalf("manifests/pipeline.yaml: %v", err)
	}
	if len(ms) != 4 {
		t.Fatalf("manifests/pipeline.yaml has %d manifests, want 4", len(ms))
	}
	for _, m := range ms {
		if err := manifest.Validate(m); err != nil {
			t.Fatalf("manifests/pipeline.yaml: %s: %v", m.Name, err)
		}
	}
	return ms
}

// deployOne deploys m through POST /v1/operators.
func deployOne(t *testing.T, rt *node.Runtime, m api.Manifest) {
	t.Helper()
	var dr api.DeployResponse
	post(t, rt, "/v1/operators", api.DeployRequest{Manifest: m}, &dr)
	if dr.Operator.Instances != m.Instances {
		t.Errorf("deployed %s with %d instances, the manifest says %d", m.Name, dr.Operator.Instances, m.Instances)
	}
}

// deployBatch deploys ms as one change through POST /v1/deployments.
func deployBatch(t *testing.T, rt *node.Runtime, ms []api.Manifest) {
	t.Helper()
	before := rt.Node().Topology().Version
	var dr api.DeploymentResponse
	post(t, rt, "/v1/deployments", api.DeploymentRequest{Manifests: ms}, &dr)
	if len(dr.Operators) != len(ms) || dr.Version != before+1 {
		t.Fatalf("deployed %d operators in version %d, want %d in version %d", len(dr.Operators), dr.Version, len(ms), before+1)
	}
}

// post sends a JSON request to rt's control API and expects 201 Created.
func post(t *testing.T, rt *node.Runtime, path string, in, out any) {
	t.Helper()
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+rt.HTTPAddr()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST %s: %s %s", path, resp.Status, msg)
	}
	if err := json.Unmarshal(msg, out); err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
}
