package kafkawordcount_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/control/api"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/manifest"
	kafkawordcount "github.com/sluicehq/sluice/samples/kafka-wordcount"
	"github.com/sluicehq/sluice/sdk"
)

// TestManifestsDeployThePipeline runs a node that only hosts the sample's
// kinds (as cmd/kafka-wordcount -host-only does), deploys the shipped
// manifests/pipeline.yaml through the control API, and checks that the
// pipeline then counts every word of the topic exactly.
func TestManifestsDeployThePipeline(t *testing.T) {
	b := kafkatest.StartBroker(t, kafkatest.BrokerConfig{})
	ctx := context.Background()
	wc := kafkawordcount.Config{Brokers: b.Addrs(), Input: "m.words", Output: "m.counts", DeadLetters: "m.dlq", Group: "m"}
	for topic, parts := range map[string]int32{wc.Input: 6, wc.Output: 6, wc.DeadLetters: 1} {
		if err := b.CreateTopic(ctx, topic, parts, nil); err != nil {
			t.Fatal(err)
		}
	}
	ops, err := kafkawordcount.Operators(wc)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := sdk.Start(ctx, sdk.Config{
		NodeID: "m1", DataDir: t.TempDir(), HTTP: "127.0.0.1:0", HostOnly: true, AtLeastOnce: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Telemetry: &sdk.TelemetryConfig{},
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
		body, err := json.Marshal(api.DeployRequest{Manifest: m})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post("http://"+rt.HTTPAddr()+"/v1/operators", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("deploy %s: %s %s", m.Name, resp.Status, msg)
		}
		var dr api.DeployResponse
		if err := json.Unmarshal(msg, &dr); err != nil {
			t.Fatalf("deploy %s: %v", m.Name, err)
		}
		if dr.Operator.Instances != m.Instances {
			t.Errorf("deployed %s with %d instances, the manifest says %d", m.Name, dr.Operator.Instances, m.Instances)
		}
	}

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

	load := kafkawordcount.Load{Records: 20_000, Vocabulary: 500, PoisonEvery: 5_000}
	want, poison := load.Counts()
	cl, err := b.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := load.Produce(ctx, cl, wc.Input, 0, load.Records, 0); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitEvery(t, 2*time.Minute, 50*time.Millisecond, "every word counted", func() bool {
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
	t.Logf("%d words and %d poison records through the manifest-deployed pipeline: counts exact", load.Records-poison, poison)
}
