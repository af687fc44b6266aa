package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/toolbin"
)

// The test services' binaries: Jaeger v1.76.0 built by
// scripts/ensure-tool.sh jaeger, Prometheus from Debian's package. The
// Makefile's test target passes both paths.
const (
	envJaegerBin     = "SLUICE_JAEGER_BIN"
	envPrometheusBin = "SLUICE_PROMETHEUS_BIN"
	jaegerVersion    = "v1.76.0"
	serviceTimeout   = 30 * time.Second
)

// TestTraceFollowsARecordAcrossTwoNodes runs gen → count → sink with gen
// and sink on n1 and count on n2, exporting spans to a real Jaeger (n2
// over OTLP/gRPC, n1 over OTLP/HTTP), and reads the one sampled record's
// trace back through Jaeger's query API: three spans, each the child of
// the one before, on the right nodes.
func TestTraceFollowsARecordAcrossTwoNodes(t *testing.T) {
	const records, service = 50, "sluice-trace-test"
	agent := consultest.Start(t)
	jaeger := startJaeger(t)
	c := newCluster(t, agent.Addr(), "-records", strconv.Itoa(records), "-keys", "10", "-gen-parallelism", "1",
		"-count-parallelism", "2", "-emit", "-sink", "-trace-sample", "1000")
	t.Setenv("OTEL_SERVICE_NAME", service)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100") // ms; the default is 5 s
	t.Setenv("OTEL_METRICS_EXPORTER", "none")  // Jaeger takes no metrics
	// The per-signal endpoint is used as given: with OTLP/HTTP it
	// includes the path.
	t.Setenv("SLUICE_HOST", "count")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://"+jaeger.otlpGRPC)
	c.start("n2")
	t.Setenv("SLUICE_HOST", "gen,sink")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://"+jaeger.otlpHTTP+"/v1/traces")
	c.start("n1")
	c.waitFor(60*time.Second, "every record at the sink", func() bool { return c.processed("sink") >= records })

	var traces []jaegerTrace
	deadline := time.Now().Add(serviceTimeout)
	for {
		var err error
		traces, err = jaeger.traces(service)
		if err == nil && len(traces) == 1 && len(traces[0].Spans) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			c.dumpLogs()
			t.Fatalf("Jaeger has no complete trace of service %s after %v: %d traces (%v), error %v\n%s",
				service, serviceTimeout, len(traces), describe(traces), err, jaeger.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	tr := traces[0]
	if len(tr.Spans) != 3 {
		t.Fatalf("the trace has %d spans, want 3: %s", len(tr.Spans), describe(traces))
	}
	byOp := map[string]jaegerSpan{}
	for _, s := range tr.Spans {
		byOp[s.OperationName] = s
	}
	gen, count, sink := byOp["produce gen"], byOp["process count"], byOp["process sink"]
	for _, tc := range []struct {
		span           jaegerSpan
		name, parent   string
		node, stream   string
		wantStreamAttr bool
	}{
		{gen, "produce gen", "", "n1", "", false},
		{count, "process count", gen.SpanID, "n2", "words", true},
		{sink, "process sink", count.SpanID, "n1", "counts", true},
	} {
		s := tc.span
		if s.SpanID == "" {
			t.Fatalf("no span %q in the trace: %s", tc.name, describe(traces))
		}
		if got := s.parent(); got != tc.parent {
			t.Errorf("%s: parent span %q, want %q", tc.name, got, tc.parent)
		}
		if got := s.tag("sluice.node.id"); got != tc.node {
			t.Errorf("%s: sluice.node.id %q, want %q", tc.name, got, tc.node)
		}
		if got := tr.Processes[s.ProcessID].tag("service.instance.id"); got != tc.node {
			t.Errorf("%s: exported by service.instance.id %q, want %q", tc.name, got, tc.node)
		}
		if got := s.tag("sluice.operator.name"); got != strings.Fields(tc.name)[1] {
			t.Errorf("%s: sluice.operator.name %q", tc.name, got)
		}
		if s.tag("sluice.operator.instance") == "" {
			t.Errorf("%s: no sluice.operator.instance tag", tc.name)
		}
		if tc.wantStreamAttr {
			if got := s.tag("sluice.stream.name"); got != tc.stream {
				t.Errorf("%s: sluice.stream.name %q, want %q", tc.name, got, tc.stream)
			}
			if s.tag("sluice.queue.wait_seconds") == "" {
				t.Errorf("%s: no sluice.queue.wait_seconds tag", tc.name)
			}
		}
	}
	t.Logf("trace %s: %s", tr.TraceID, describe(traces))
}

// TestPrometheusScrapesPerOperatorSeries runs one node (gen → count →
// sink), has a real Prometheus scrape its /metrics, and reads the
// per-operator series back through Prometheus' query API.
func TestPrometheusScrapesPerOperatorSeries(t *testing.T) {
	const records = 2000
	c := newCluster(t, "", "-records", strconv.Itoa(records), "-keys", "100", "-gen-parallelism", "1",
		"-count-parallelism", "3", "-emit", "-sink")
	t.Setenv("SLUICE_HOST", "")
	t.Setenv("OTEL_METRICS_EXPORTER", "prometheus")
	n := c.start("n1")
	c.waitFor(60*time.Second, "every record at the sink", func() bool { return c.processed("sink") >= records })
	prom := startPrometheus(t, n.http)

	// Consumed records per operator, summed over instances, as scraped
	// after the node processed everything.
	want := map[string]float64{"gen": 0, "count": records, "sink": records}
	prom.waitFor(t, "sum by (sluice_operator_name) (sluice_operator_consumed_records_total)", func(r []promSeries) bool {
		got := map[string]float64{}
		for _, s := range r {
			got[s.Metric["sluice_operator_name"]] = s.value()
		}
		for op, v := range want {
			if got[op] != v {
				return false
			}
		}
		return true
	})
	// One series per instance, for each per-instance metric.
	instances := map[string]int{"gen": 1, "count": 3, "sink": 2}
	for _, metric := range []string{
		"sluice_operator_produced_records_total", "sluice_operator_mailbox_length", "sluice_operator_restarts_total",
		"sluice_operator_dead_letters_total", "sluice_operator_state_size_bytes",
	} {
		prom.waitFor(t, metric, func(r []promSeries) bool {
			got := map[string]int{}
			for _, s := range r {
				if s.Metric["sluice_operator_instance"] == "" || s.Metric["service_instance_id"] != "n1" {
					return false
				}
				got[s.Metric["sluice_operator_name"]]++
			}
			for op, n := range instances {
				if got[op] != n {
					return false
				}
			}
			return true
		})
	}
	prom.waitFor(t, `sum(sluice_operator_process_duration_seconds_count{sluice_operator_name="count"})`, func(r []promSeries) bool {
		return len(r) == 1 && r[0].value() > 0
	})
	for _, metric := range []string{"process_cpu_time_seconds_total", "process_memory_usage_bytes", "go_memory_used_bytes", "go_goroutine_count"} {
		prom.waitFor(t, metric, func(r []promSeries) bool { return len(r) > 0 })
	}
}

// TestShippedCollectorConfigAndDashboard runs the collector config that
// ships in deploy/otel (with the Jaeger binary, an OpenTelemetry Collector
// distribution that has every component it uses) between a node exporting
// both signals over OTLP/gRPC and their backends: a Jaeger for the traces
// and a Prometheus scraping the collector. Every query of the Grafana
// dashboard in deploy/grafana must then answer with data.
func TestShippedCollectorConfigAndDashboard(t *testing.T) {
	const records, service = 3000, "sluice-collector-test"
	store := startJaeger(t)
	collector := startCollector(t, store.otlpGRPC)
	c := newCluster(t, "", "-records", strconv.Itoa(records), "-keys", "100", "-gen-parallelism", "1",
		"-count-parallelism", "2", "-emit", "-sink", "-trace-sample", "500")
	for k, v := range map[string]string{
		"SLUICE_HOST": "", "OTEL_SERVICE_NAME": service,
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + collector.otlpGRPC, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_METRICS_EXPORTER":       "otlp", // no /metrics: Prometheus sees only what went through the collector
		"OTEL_TRACES_EXPORTER":        "otlp",
		"OTEL_METRIC_EXPORT_INTERVAL": "500", "OTEL_BSP_SCHEDULE_DELAY": "100", // ms
	} {
		t.Setenv(k, v)
	}
	c.start("n1")
	prom := startPrometheus(t, collector.prometheus)
	prom.waitFor(t, "sum by (sluice_operator_name) (sluice_operator_consumed_records_total)", func(r []promSeries) bool {
		got := map[string]float64{}
		for _, s := range r {
			got[s.Metric["sluice_operator_name"]] = s.value()
		}
		return got["count"] == records && got["sink"] == records
	})

	var dash struct {
		Panels []struct {
			Type, Title string
			Targets     []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name       string
				Definition string
			}
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "sluice-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("deploy/grafana/sluice-dashboard.json: %v", err)
	}
	vars := strings.NewReplacer("$node", ".+", "$operator", ".+", "$__rate_interval", "1m")
	queries := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries++
			prom.waitFor(t, vars.Replace(tg.Expr), func(r []promSeries) bool { return len(r) > 0 })
		}
	}
	if queries < 10 {
		t.Fatalf("the dashboard has %d queries, want its ≥ 10 panels' queries", queries)
	}
	// The template variables: label_values(METRIC, LABEL).
	for _, v := range dash.Templating.List {
		metric, label, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(v.Definition, "label_values("), ")"), ", ")
		if !ok {
			continue
		}
		body, err := httpGet("http://" + prom.addr + "/api/v1/label/" + label + "/values?match[]=" + url.QueryEscape(vars.Replace(metric)))
		if err != nil || !strings.Contains(string(body), `"n1"`) && !strings.Contains(string(body), `"count"`) {
			t.Errorf("variable %s (%s): %s %v", v.Name, v.Definition, body, err)
		}
	}

	// Traces went through the collector to Jaeger.
	deadline := time.Now().Add(serviceTimeout)
	for {
		traces, err := store.traces(service)
		if err == nil && len(traces) > 0 && len(traces[0].Spans) == 3 {
			t.Logf("%d dashboard queries answered; %d traces in Jaeger, e.g. %s", queries, len(traces), describe(traces[:1]))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no trace of %s reached Jaeger through the collector: %d traces, error %v\ncollector:\n%s", service, len(traces), err, collector.svc.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// collector is deploy/otel/collector.yaml run by the Jaeger binary.
type collector struct {
	svc                            *service
	otlpGRPC, otlpHTTP, prometheus string
}

func startCollector(t *testing.T, jaegerOTLP string) *collector {
	t.Helper()
	bin := jaegerBinary(t)
	dir := t.TempDir()
	cfg, err := filepath.Abs(filepath.Join("..", "..", "deploy", "otel", "collector.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for try := 1; try <= 3; try++ {
		ports := freePorts(t, 3)
		c := &collector{otlpGRPC: ports[0], otlpHTTP: ports[1], prometheus: ports[2]}
		env := []string{"OTLP_GRPC_ENDPOINT=" + c.otlpGRPC, "OTLP_HTTP_ENDPOINT=" + c.otlpHTTP,
			"PROMETHEUS_ENDPOINT=" + c.prometheus, "JAEGER_ENDPOINT=" + jaegerOTLP}
		// The collector's own metrics would listen on :8888; the test needs
		// none.
		c.svc, err = startService(t, "collector", bin, dir, env, func() error { return dial(c.otlpGRPC, c.otlpHTTP, c.prometheus) },
			"--config", "file:"+cfg, "--set", "service.telemetry.metrics.level=none")
		if err == nil {
			return c
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("start the collector: %v", err)
	return nil
}

// jaeger is a Jaeger v2 process with an in-memory store, an OTLP receiver
// and the query API, all on loopback ports picked at run time.
type jaeger struct {
	svc                       *service
	query, otlpGRPC, otlpHTTP string
}

const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: memstore
    enable_tracing: false
    http:
      endpoint: %s
    grpc:
      endpoint: %s
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := jaegerBinary(t)
	dir := t.TempDir()
	var err error
	for try := 1; try <= 3; try++ {
		ports := freePorts(t, 4)
		j := &jaeger{query: ports[0], otlpGRPC: ports[2], otlpHTTP: ports[3]}
		cfg := filepath.Join(dir, "jaeger.yaml")
		if err := os.WriteFile(cfg, fmt.Appendf(nil, jaegerConfig, ports[0], ports[1], ports[2], ports[3]), 0o644); err != nil {
			t.Fatal(err)
		}
		j.svc, err = startService(t, "jaeger", bin, dir, nil, func() error {
			if err := dial(j.otlpGRPC, j.otlpHTTP); err != nil {
				return err
			}
			_, err := httpGet("http://" + j.query + "/api/services")
			return err
		}, "--config", "file:"+cfg)
		if err == nil {
			return j
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("start Jaeger: %v", err)
	return nil
}

func (j *jaeger) logTail() string { return j.svc.logTail() }

// Jaeger's query API (/api/traces, the JSON the UI reads).
type jaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []jaegerSpan             `json:"spans"`
	Processes map[string]jaegerProcess `json:"processes"`
}

type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags      []jaegerTag `json:"tags"`
	ProcessID string      `json:"processID"`
}

type jaegerProcess struct {
	ServiceName string      `json:"serviceName"`
	Tags        []jaegerTag `json:"tags"`
}

type jaegerTag struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

func (s jaegerSpan) tag(key string) string    { return tagValue(s.Tags, key) }
func (p jaegerProcess) tag(key string) string { return tagValue(p.Tags, key) }

func tagValue(tags []jaegerTag, key string) string {
	for _, t := range tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// traces returns the traces of service.
func (j *jaeger) traces(service string) ([]jaegerTrace, error) {
	body, err := httpGet("http://" + j.query + "/api/traces?limit=20&lookback=1h&service=" + url.QueryEscape(service))
	if err != nil {
		return nil, err
	}
	var resp struct {
		Data   []jaegerTrace `json:"data"`
		Errors []any         `json:"errors"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("decode /api/traces: %w", err)
	}
	if len(resp.Errors) > 0 {
		return nil, fmt.Errorf("/api/traces: %v", resp.Errors)
	}
	return resp.Data, nil
}

// describe lists the traces' spans as "name←parent@node".
func describe(traces []jaegerTrace) string {
	var out []string
	for _, tr := range traces {
		names := map[string]string{}
		for _, s := range tr.Spans {
			names[s.SpanID] = s.OperationName
		}
		var spans []string
		for _, s := range tr.Spans {
			spans = append(spans, fmt.Sprintf("%s←%s@%s", s.OperationName, names[s.parent()], s.tag("sluice.node.id")))
		}
		sort.Strings(spans)
		out = append(out, tr.TraceID+": "+strings.Join(spans, ", "))
	}
	return strings.Join(out, "; ")
}

// prometheus is a Prometheus server scraping one target every second.
type prometheus struct {
	svc  *service
	addr string
}

const prometheusConfig = `global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: sluice
    static_configs:
      - targets: ['%s']
`

func startPrometheus(t *testing.T, target string) *prometheus {
	t.Helper()
	bin := prometheusBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, prometheusConfig, target), 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	for try := 1; try <= 3; try++ {
		p := &prometheus{addr: freePorts(t, 1)[0]}
		p.svc, err = startService(t, "prometheus", bin, dir, nil, func() error {
			_, err := httpGet("http://" + p.addr + "/-/ready")
			return err
		}, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+p.addr, "--log.level=warn")
		if err == nil {
			return p
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("start Prometheus: %v", err)
	return nil
}

// promSeries is one series of an instant query's result.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s promSeries) value() float64 {
	v, _ := s.Value[1].(string)
	f, _ := strconv.ParseFloat(v, 64)
	return f
}

// query runs an instant PromQL query.
func (p *prometheus) query(q string) ([]promSeries, error) {
	body, err := httpGet("http://" + p.addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	var resp struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSeries `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("decode the answer to %s: %w", q, err)
	}
	if resp.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", q, resp.Error)
	}
	return resp.Data.Result, nil
}

// waitFor polls query q until ok accepts its result.
func (p *prometheus) waitFor(t *testing.T, q string, ok func([]promSeries) bool) {
	t.Helper()
	deadline := time.Now().Add(serviceTimeout)
	for {
		r, err := p.query(q)
		if err == nil && ok(r) {
			return
		}
		if time.Now().After(deadline) {
			targets, _ := httpGet("http://" + p.addr + "/api/v1/targets")
			t.Fatalf("Prometheus: %s: no acceptable answer within %v: %+v (error %v)\ntargets: %s\n%s",
				q, serviceTimeout, r, err, targets, p.svc.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// service is a test service process (Jaeger, Prometheus, the collector),
// stopped when the test ends.
type service struct {
	name string
	log  string
	proc *proctest.Service
}

// startService starts bin with env added to the test's environment and
// polls ready until it succeeds, the process exits (an error with its log)
// or serviceTimeout passes.
func startService(t *testing.T, name, bin, dir string, env []string, ready func() error, args ...string) (*service, error) {
	t.Helper()
	s := &service{name: name, log: filepath.Join(dir, name+".log")}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var err error
	if s.proc, err = proctest.Spawn(cmd, s.log); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.proc.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("%s log tail (%s):\n%s", name, s.log, s.logTail())
		}
	})
	if err := s.proc.WaitReady(serviceTimeout, ready); err != nil {
		s.proc.Stop(5 * time.Second)
		return nil, fmt.Errorf("%s: %w\n%s", name, err, s.logTail())
	}
	return s, nil
}

func (s *service) logTail() string {
	b, _ := os.ReadFile(s.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// jaegerBinary returns the Jaeger binary: $SLUICE_JAEGER_BIN, else the
// one scripts/ensure-tool.sh caches. It fails the test with instructions
// when there is none: building it takes about 10 minutes, too long to do
// inside a test.
func jaegerBinary(t *testing.T) string {
	t.Helper()
	hint := "build it with `scripts/ensure-tool.sh jaeger` (Jaeger " + jaegerVersion +
		" from the Go module proxy into $HOME/.cache/sluice/bin, about 10 minutes the first time; `make test` does this) and/or set " + envJaegerBin
	p, err := toolbin.Tool{Name: "jaeger", File: "jaeger-" + jaegerVersion, Env: envJaegerBin, Check: executable}.Find(nil)
	if err != nil {
		t.Fatalf("no usable Jaeger binary: %v; %s", err, hint)
	}
	return p
}

// prometheusBinary returns $SLUICE_PROMETHEUS_BIN or prometheus on the
// PATH, failing the test with instructions when there is none.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	hint := "install Debian's package (`apt-get install -y prometheus`; `make test` does this) and/or set " + envPrometheusBin
	p := os.Getenv(envPrometheusBin)
	if p == "" {
		var err error
		if p, err = exec.LookPath("prometheus"); err != nil {
			t.Fatalf("no Prometheus binary: %v; %s", err, hint)
		}
	}
	if err := executable(p); err != nil {
		t.Fatalf("no usable Prometheus binary: %v; %s", err, hint)
	}
	return p
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// freePorts returns n distinct free loopback addresses ("127.0.0.1:port").
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// dial checks that something listens on each address.
func dial(addrs ...string) error {
	for _, a := range addrs {
		c, err := net.DialTimeout("tcp", a, time.Second)
		if err != nil {
			return err
		}
		c.Close()
	}
	return nil
}

// httpGet returns the body of a 200 answer.
func httpGet(u string) ([]byte, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %.200s", u, resp.Status, body)
	}
	return body, nil
}
