package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice/actors/status"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
	"github.com/sluicehq/sluice/telemetry"
)

// relay passes every record from "a" on to "b".
type relay struct{}

func (relay) Metadata() sdk.Metadata {
	return sdk.Metadata{Name: "relay", Inputs: []sdk.Input{{Stream: "a", Routing: sdk.GroupBy}}, Outputs: []string{"b"}, Parallelism: 2}
}
func (relay) Init(sdk.Context) error { return nil }
func (relay) ProcessRecord(ctx sdk.Context, rec sdk.Record) error {
	return ctx.Produce("b", sdk.Record{Key: rec.Key, Value: rec.Value})
}
func (relay) ProcessTimer(sdk.Context, string, time.Time) error { return nil }

// TestEmbeddedRuntimeTracesAndServesMetrics runs gen → relay → sink in one
// process with telemetry through node.Config: 1 in 10 of gen's records is
// traced through all three operators, and /metrics on the control address
// has every operator's series.
func TestEmbeddedRuntimeTracesAndServesMetrics(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // ms between span exports, instead of 5 s
	spans := tracetest.NewInMemoryExporter()
	tc := telemetry.DefaultConfig()
	tc.Sampling = telemetry.Sampling{Every: 10}
	tc.SpanExporter = spans
	got := &sluicetest.Collector{}
	rt, err := node.Start(context.Background(), node.Config{
		NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t), NodeID: "solo"},
		HTTP:       "127.0.0.1:0", Telemetry: &tc},
		func() sdk.Operator {
			return &sluicetest.Gen{Name: "gen", Stream: "a", Count: 100, Key: sluicetest.Key(7)}
		},
		func() sdk.Operator { return relay{} },
		func() sdk.Operator {
			return &sluicetest.Sink{Name: "sink", Inputs: []sdk.Input{{Stream: "b"}}, Into: got}
		},
	)
	sluicetest.Must(t, err)
	defer rt.Stop(context.Background())
	sluicetest.WaitFor(t, 20*time.Second, "100 records at the sink", func() bool { return got.Len() == 100 })

	traced := map[string]bool{} // trace IDs at the sink
	for _, d := range got.All() {
		if tp, ok := d.Record.Header(status.TraceHeader); ok {
			sc, valid := telemetry.ParseTraceparent(tp)
			if !valid {
				t.Fatalf("record at the sink carries trace header %q", tp)
			}
			traced[sc.TraceID().String()] = true
		}
	}
	if len(traced) != 10 {
		t.Fatalf("%d traces reached the sink, want 10 (1 in 10 of 100 sampled)", len(traced))
	}

	// Each trace: produce gen → process relay → process sink.
	var stubs tracetest.SpanStubs
	sluicetest.WaitFor(t, 20*time.Second, "30 spans exported", func() bool {
		stubs = spans.GetSpans()
		return len(stubs) >= 30
	})
	byID := map[string]tracetest.SpanStub{}
	for _, s := range stubs {
		byID[s.SpanContext.SpanID().String()] = s
	}
	chains := 0
	for _, s := range stubs {
		if s.Name != telemetry.SpanProcess+"sink" {
			continue
		}
		r, ok := byID[s.Parent.SpanID().String()]
		if !ok || r.Name != telemetry.SpanProcess+"relay" {
			t.Fatalf("sink span's parent is %q, want the relay's", r.Name)
		}
		g, ok := byID[r.Parent.SpanID().String()]
		if !ok || g.Name != telemetry.SpanProduce+"gen" || g.Parent.IsValid() {
			t.Fatalf("relay span's parent is %q (parent %v), want the root gen span", g.Name, g.Parent)
		}
		if !traced[s.SpanContext.TraceID().String()] {
			t.Fatalf("sink span in trace %s, which no record carried", s.SpanContext.TraceID())
		}
		chains++
	}
	if chains != 10 || len(stubs) != 30 {
		t.Fatalf("%d complete chains in %d spans, want 10 in 30", chains, len(stubs))
	}

	body := get(t, "http://"+rt.HTTPAddr()+"/metrics")
	for _, want := range []string{
		`sluice_operator_consumed_records_total{`,
		`sluice_operator_instance="1",sluice_operator_name="relay"`,
		`sluice_operator_produced_records_total{`,
		`sluice_operator_process_duration_seconds_bucket{`,
		`sluice_operator_end_to_end_duration_seconds_count{`,
		`sluice_operator_mailbox_length{`,
		`sluice_operator_restarts_total{`,
		`sluice_operator_dead_letters_total{`,
		`sluice_operator_transient_errors_total{`,
		`sluice_operator_state_size_bytes{`,
		`sluice_node_buffered_records{`,
		`service_instance_id="solo"`,
		`process_cpu_time_seconds_total{`,
		`process_memory_usage_bytes{`,
		`go_memory_used_bytes{`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
