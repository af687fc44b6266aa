package http_test

import (
	"errors"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	shttp "github.com/sluicehq/sluice/connectors/http"
	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// receiver is a real HTTP server on loopback that answers each POST with
// the next scripted status (200 once the script is used up) and keeps
// what it accepted per Idempotency-Key.
type receiver struct {
	mu       sync.Mutex
	script   []int
	always   int // answered to every request once the script is used up; 0: 200
	posts    int
	byKey    map[string][]string
	order    []string // keys in order of first acceptance
	auth     []string
	srv      *httptest.Server
	retryHdr string
}

func newReceiver(t *testing.T, script ...int) *receiver {
	r := &receiver{script: script, byKey: map[string][]string{}}
	r.srv = httptest.NewServer(nethttp.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w nethttp.ResponseWriter, req *nethttp.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posts++
	r.auth = append(r.auth, req.Header.Get("Authorization"))
	status := 200
	if len(r.script) > 0 {
		status, r.script = r.script[0], r.script[1:]
	} else if r.always != 0 {
		status = r.always
	}
	if status != 200 {
		if r.retryHdr != "" {
			w.Header().Set("Retry-After", r.retryHdr)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte("scripted failure"))
		return
	}
	if req.Header.Get("Content-Type") != "application/x-ndjson" {
		w.WriteHeader(415)
		return
	}
	key := req.Header.Get(shttp.HeaderIdempotencyKey)
	if _, seen := r.byKey[key]; !seen {
		r.order = append(r.order, key)
		r.byKey[key] = strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	}
	w.WriteHeader(200)
}

// records returns what was accepted, once per key, in order.
func (r *receiver) records() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, k := range r.order {
		out = append(out, r.byKey[k]...)
	}
	return out
}

func (r *receiver) count() (posts, keys int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posts, len(r.order)
}

func startSink(t *testing.T, cfg shttp.SinkConfig, opts ...sdktest.Option) *sdktest.Harness {
	t.Helper()
	cfg.Name, cfg.Inputs = "post", []sdk.Input{{Stream: "in"}}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff, cfg.MaxBackoff = time.Millisecond, 20*time.Millisecond
	}
	f, err := shttp.NewSink(cfg)
	return harness(t, f, err, opts...)
}

func sendJSON(t *testing.T, h *sdktest.Harness, vals ...string) {
	t.Helper()
	for _, v := range vals {
		must(t, h.Send("in", sdk.Record{Value: []byte(v)}))
	}
}

// Batches failing 503 are sent again with backoff until accepted; Flush
// returns once every batch in flight is delivered.
func TestSinkRetriesAndFlushWaits(t *testing.T) {
	r := newReceiver(t, 503, 503)
	st := new(shttp.Stats)
	h := startSink(t, shttp.SinkConfig{URL: r.srv.URL, Token: token, BatchRecords: 2, Stats: st}, sdktest.WithGuarantee(sdk.AtLeastOnce))
	sendJSON(t, h, `1`, `2`, `3`, `{"a": 4}`, `5`)
	must(t, h.Flush())
	got := r.records()
	slices.Sort(got)
	if want := []string{"1", "2", "3", "5", `{"a":4}`}; !slices.Equal(got, want) {
		t.Fatalf("after Flush the receiver has %v, want %v", got, want)
	}
	if st.Retries.Load() != 2 || st.Records.Load() != 5 {
		t.Fatalf("Stats: retries %d records %d, want 2 and 5", st.Retries.Load(), st.Records.Load())
	}
	if r.auth[0] != "Bearer "+token {
		t.Fatalf("Authorization: got %q", r.auth[0])
	}
}

// A 429 with Retry-After is retried after the time it asks, not before.
func TestSinkHonoursRetryAfter(t *testing.T) {
	r := newReceiver(t, 429)
	r.retryHdr = "1"
	h := startSink(t, shttp.SinkConfig{URL: r.srv.URL, MaxBackoff: 5 * time.Second, MinBackoff: time.Millisecond}, sdktest.WithGuarantee(sdk.AtLeastOnce))
	sendJSON(t, h, `"x"`)
	start := time.Now()
	must(t, h.Flush())
	if d := time.Since(start); d < time.Second {
		t.Fatalf("retried after %v, want after Retry-After (1 s)", d)
	}
	if got := r.records(); !slices.Equal(got, []string{`"x"`}) {
		t.Fatalf("receiver: got %v", got)
	}
}

// A batch answered 400 DeadLetterAfter times goes to the dead-letter
// stream, a record per dead letter naming the status; a value that is
// not JSON goes there at once.
func TestSinkDeadLetters(t *testing.T) {
	r := newReceiver(t)
	r.always = 400
	st := new(shttp.Stats)
	h := startSink(t, shttp.SinkConfig{URL: r.srv.URL, DeadLetterAfter: 2, Stats: st}, sdktest.WithGuarantee(sdk.AtLeastOnce))
	sendJSON(t, h, `1`, `not json`, `2`)
	must(t, h.Flush())
	r.mu.Lock()
	r.always = 200
	r.mu.Unlock()
	sendJSON(t, h, `3`) // the runtime takes dead letters from ProcessRecord
	dl := h.Take(sdk.DeadLetterStream("post"))
	if got := values(dl); !slices.Equal(got, []string{"not json", "1", "2"}) {
		t.Fatalf("dead letters: got %v, want [not json 1 2]", got)
	}
	if why := header(dl[1], sdk.HeaderError); !strings.Contains(why, "400") {
		t.Fatalf("dead letter's %s: got %q, want the status", sdk.HeaderError, why)
	}
	if posts, _ := r.count(); posts != 2 {
		t.Fatalf("attempts: got %d, want DeadLetterAfter (2)", posts)
	}
	if st.DeadLetters.Load() != 3 {
		t.Fatalf("Stats.DeadLetters: got %d, want 3", st.DeadLetters.Load())
	}
}

// A receiver failing with 500 MaxAttempts times fails Flush (transient,
// ErrDelivery); the batch is kept and delivered once it recovers.
func TestSinkKeepsUndeliveredBatches(t *testing.T) {
	r := newReceiver(t, 500, 500, 500)
	st := new(shttp.Stats)
	h := startSink(t, shttp.SinkConfig{URL: r.srv.URL, MaxAttempts: 3, Stats: st}, sdktest.WithGuarantee(sdk.AtLeastOnce))
	sendJSON(t, h, `1`, `2`)
	err := h.Flush()
	if !errors.Is(err, shttp.ErrDelivery) || !errors.Is(err, sdk.ErrTransient) {
		t.Fatalf("Flush with the receiver failing: got %v, want ErrDelivery, transient", err)
	}
	if st.Failures.Load() != 1 {
		t.Fatalf("Stats.Failures: got %d, want 1", st.Failures.Load())
	}
	must(t, h.Flush())
	if got := r.records(); !slices.Equal(got, []string{"1", "2"}) {
		t.Fatalf("after recovery: got %v, want [1 2]", got)
	}
}

// Exactly-once: nothing is sent before the checkpoint completes; a
// commit repeated after a crash sends the same batches with the same
// Idempotency-Keys, so a receiver that drops repeated keys has every
// record once.
func TestSinkExactlyOnceSendsOnCommit(t *testing.T) {
	r := newReceiver(t)
	h := startSink(t, shttp.SinkConfig{URL: r.srv.URL, BatchRecords: 2})
	sendJSON(t, h, `"a"`, `"b"`, `"c"`)
	must(t, h.Checkpoint(1))
	if posts, _ := r.count(); posts != 0 {
		t.Fatalf("%d posts before checkpoint 1 completed", posts)
	}
	must(t, h.Complete(1))
	sendJSON(t, h, `"d"`)
	must(t, h.Checkpoint(2))
	must(t, h.Crash(1)) // checkpoint 2 lost: "d" comes again from upstream
	sendJSON(t, h, `"d"`, `"e"`)
	must(t, h.Checkpoint(3)) // completes without the node hearing of it
	must(t, h.Crash(3))      // the restore commits it
	must(t, h.Checkpoint(4))
	must(t, h.Complete(4))
	if got, want := r.records(), []string{`"a"`, `"b"`, `"c"`, `"d"`, `"e"`}; !slices.Equal(got, want) {
		t.Fatalf("receiver: got %v, want %v", got, want)
	}
	posts, keys := r.count()
	if posts <= keys {
		t.Fatalf("posts %d, keys %d: want the commit of checkpoint 1 repeated after the crash", posts, keys)
	}
	if r.order[0] != "post-00000-1-0" {
		t.Fatalf("first key: got %q, want <writer>-<checkpoint>-<batch>", r.order[0])
	}
}

// The sink's batches into the webhook source: the source drops the
// repeated keys of a commit repeated after a crash.
func TestSinkIntoSourceDedupes(t *testing.T) {
	sst := new(shttp.Stats)
	src, url := startSource(t, shttp.SourceConfig{Tokens: []string{token}, Stats: sst}, sdktest.WithGuarantee(sdk.NoGuarantee))
	stop, polled := pollInBackground(src)
	h := startSink(t, shttp.SinkConfig{URL: url(), Token: token})
	sendJSON(t, h, `"a"`, `"b"`)
	must(t, h.Checkpoint(1))
	must(t, h.Complete(1))
	must(t, h.Crash(1)) // commits checkpoint 1 again
	close(stop)
	got := <-polled
	if !slices.Equal(got, []string{`"a"`, `"b"`}) {
		t.Fatalf("source produced %v, want [a b] once", got)
	}
	if sst.Duplicates.Load() != 1 {
		t.Fatalf("source Stats.Duplicates: got %d, want 1", sst.Duplicates.Load())
	}
}

func header(rec sdk.Record, key string) string {
	for _, h := range rec.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return ""
}

func TestSinkConfigRefused(t *testing.T) {
	for name, cfg := range map[string]shttp.SinkConfig{
		"no url":     {Name: "p", Inputs: []sdk.Input{{Stream: "in"}}},
		"bad scheme": {Name: "p", Inputs: []sdk.Input{{Stream: "in"}}, URL: "ftp://x/"},
		"backoff":    {Name: "p", Inputs: []sdk.Input{{Stream: "in"}}, URL: "http://x/", MinBackoff: time.Second, MaxBackoff: time.Millisecond},
	} {
		if _, err := shttp.NewSink(cfg); !errors.Is(err, shttp.ErrConfig) {
			t.Errorf("%s: got %v, want ErrConfig", name, err)
		}
	}
}

// The receiver goes away (connection refused) and comes back on the same
// address: Flush fails with ErrDelivery while it is gone, and the kept
// batch is delivered once, after it is back.
func TestSinkReceiverGoneAndBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // gone: nothing listens there
	st := new(shttp.Stats)
	h := startSink(t, shttp.SinkConfig{URL: "http://" + addr + "/in", MaxAttempts: 2, Stats: st}, sdktest.WithGuarantee(sdk.AtLeastOnce))
	sendJSON(t, h, `1`, `2`)
	if err := h.Flush(); !errors.Is(err, shttp.ErrDelivery) {
		t.Fatalf("Flush with the receiver gone: got %v, want ErrDelivery", err)
	}
	r := &receiver{byKey: map[string][]string{}}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s again: %v", addr, err)
	}
	r.srv = &httptest.Server{Listener: ln, Config: &nethttp.Server{Handler: nethttp.HandlerFunc(r.serve)}}
	r.srv.Start()
	t.Cleanup(r.srv.Close)
	sendJSON(t, h, `3`)
	must(t, h.Flush())
	got := r.records()
	slices.Sort(got) // the kept batch and the new one were in flight together
	if !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("after the receiver came back: got %v, want [1 2 3] once", got)
	}
	if st.Failures.Load() != 1 || st.Retries.Load() < 1 {
		t.Fatalf("Stats: failures %d retries %d, want 1 and ≥ 1", st.Failures.Load(), st.Retries.Load())
	}
}

// pollInBackground polls src on a goroutine of its own (the instance's)
// until stop is closed, then sends what it produced on polled.
func pollInBackground(src *sdktest.Harness) (stop chan struct{}, polled chan []string) {
	stop, polled = make(chan struct{}), make(chan []string, 1)
	go func() {
		var got []string
		for {
			select {
			case <-stop:
				polled <- got
				return
			default:
			}
			if err := src.Poll(); err != nil {
				polled <- append(got, "poll error: "+err.Error())
				return
			}
			got = append(got, values(src.Take("events"))...)
		}
	}()
	return stop, polled
}

// The sink presents its client certificate to a source that requires
// one (mutual TLS), and verifies the source's certificate.
func TestSinkMutualTLS(t *testing.T) {
	ca := credstest.NewCA(t, "ca")
	srvFiles := ca.Node(t, "server")
	cli := ca.Client(t, "client").Config()
	sst := new(shttp.Stats)
	src, _ := startSource(t, shttp.SourceConfig{Stats: sst, TLS: &shttp.ServerTLS{Files: srvFiles.Config(), ClientAuth: creds.RequireClientCert}},
		sdktest.WithGuarantee(sdk.NoGuarantee))
	stop, polled := pollInBackground(src)
	h := startSink(t, shttp.SinkConfig{URL: "https://" + sst.Addr(0) + "/", TLS: &cli}, sdktest.WithGuarantee(sdk.AtLeastOnce))
	sendJSON(t, h, `{"n":1}`)
	err := h.Flush()
	close(stop)
	got := <-polled
	must(t, err)
	if !slices.Equal(got, []string{`{"n":1}`}) {
		t.Fatalf("source produced %v, want the record", got)
	}
	noCert := creds.Config{CAFile: cli.CAFile}
	bad := startSink(t, shttp.SinkConfig{URL: "https://" + sst.Addr(0) + "/", TLS: &noCert, MaxAttempts: 1}, sdktest.WithGuarantee(sdk.AtLeastOnce))
	sendJSON(t, bad, `1`)
	if err := bad.Flush(); !errors.Is(err, shttp.ErrDelivery) {
		t.Fatalf("without a client certificate: got %v, want the handshake refused (ErrDelivery)", err)
	}
}
