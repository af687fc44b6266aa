package http_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	nethttp "net/http"
	"slices"
	"strings"
	"testing"
	"time"

	shttp "github.com/sluicehq/sluice/connectors/http"
	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

// Requests without a token, with a wrong one or a wrong scheme are
// refused 401 and produce nothing.
func TestSourceRefusesUnauthenticated(t *testing.T) {
	st := new(shttp.Stats)
	h, url := startSource(t, shttp.SourceConfig{Tokens: []string{token}, Stats: st}, sdktest.WithGuarantee(sdk.NoGuarantee))
	ctx := t.Context()
	for name, hdr := range map[string]map[string]string{
		"none":   nil,
		"wrong":  {"Authorization": "Bearer " + strings.Repeat("x", len(token))},
		"basic":  {"Authorization": "Basic " + token},
		"prefix": {"Authorization": "Bearer " + token[:20]},
	} {
		r := await(t, post(ctx, nethttp.DefaultClient, url(), "application/json", `[{"a":1}]`, hdr))
		if r.status != nethttp.StatusUnauthorized {
			t.Errorf("%s: got %d %s, want 401", name, r.status, r.body)
		}
	}
	if err := h.Poll(); err != nil {
		t.Fatal(err)
	}
	if got := h.Output("events"); len(got) != 0 {
		t.Fatalf("unauthenticated requests produced %v", values(got))
	}
	if st.Unauthorized.Load() != 4 {
		t.Fatalf("Stats.Unauthorized: got %d, want 4", st.Unauthorized.Load())
	}
	c := post(ctx, nethttp.DefaultClient, url(), "application/json", `[{"a":1}]`, bearer())
	if got := pollTake(t, h, 1); !slices.Equal(got, []string{`{"a":1}`}) {
		t.Fatalf("records: got %v", got)
	}
	if r := await(t, c); r.status != nethttp.StatusOK {
		t.Fatalf("authenticated request: got %d %s, want 200", r.status, r.body)
	}
}

// A client certificate signed by the CA authenticates without a token;
// a client without one is refused.
func TestSourceClientCertificates(t *testing.T) {
	ca := credstest.NewCA(t, "ca")
	srv := ca.Node(t, "server")
	cli := ca.Client(t, "client")
	files := srv.Config()
	st := new(shttp.Stats)
	h, _ := startSource(t, shttp.SourceConfig{Stats: st, TLS: &shttp.ServerTLS{Files: files, ClientAuth: creds.VerifyClientCertIfGiven}},
		sdktest.WithGuarantee(sdk.NoGuarantee))
	url := "https://" + st.Addr(0) + "/"
	client := func(f *credstest.Files) *nethttp.Client {
		cfg := creds.Config{CAFile: ca.CertFile}
		if f != nil {
			cfg = f.Config()
		}
		src, err := creds.Load(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = src.Close() })
		tc, err := src.ClientTLS("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		tr := &nethttp.Transport{TLSClientConfig: tc}
		t.Cleanup(tr.CloseIdleConnections)
		return &nethttp.Client{Transport: tr}
	}
	if r := await(t, post(t.Context(), client(nil), url, "application/json", `[1]`, nil)); r.status != nethttp.StatusUnauthorized {
		t.Fatalf("without a certificate: got %d %s, want 401", r.status, r.body)
	}
	c := post(t.Context(), client(&cli), url, "application/json", `[1,2]`, nil)
	if got := pollTake(t, h, 2); !slices.Equal(got, []string{"1", "2"}) {
		t.Fatalf("records: got %v", got)
	}
	if r := await(t, c); r.status != nethttp.StatusOK {
		t.Fatalf("with a certificate: got %d %s, want 200", r.status, r.body)
	}
}

// Bad bodies are refused with a status and a message naming the problem,
// and produce nothing.
func TestSourceRefusesBadBodies(t *testing.T) {
	st := new(shttp.Stats)
	h, url := startSource(t, shttp.SourceConfig{Tokens: []string{token}, Stats: st, MaxBodyBytes: 1000, MaxRecordBytes: 50, KeyField: "id"},
		sdktest.WithGuarantee(sdk.NoGuarantee))
	for _, tc := range []struct {
		name, ctype, body string
		status            int
		msg               string
	}{
		{"bad line", "application/x-ndjson", "{\"id\":\"a\"}\n{\"id\":\n", 400, "record 2 (line 2): invalid JSON"},
		{"bad array", "application/json", `[{"id":"a"}, nope]`, 400, "record 2: invalid JSON"},
		{"unclosed array", "application/json", `[{"id":"a"}`, 400, "does not end"},
		{"empty", "application/json", ``, 400, "empty body"},
		{"content type", "text/plain", `{"id":"a"}`, 415, "want application/json"},
		{"no key", "application/json", `[{"id":"a"},{"x":1}]`, 400, `record 2: KeyField`},
		{"big record", "application/json", `[{"id":"a"},{"id":"` + strings.Repeat("b", 60) + `"}]`, 413, "record 2 is 69 bytes"},
		{"big body", "application/x-ndjson", strings.Repeat("{\"id\":\"a\"}\n", 200), 413, "larger than 1000 bytes"},
	} {
		r := await(t, post(t.Context(), nethttp.DefaultClient, url(), tc.ctype, tc.body, bearer()))
		if r.status != tc.status || !strings.Contains(r.body, tc.msg) {
			t.Errorf("%s: got %d %s, want %d naming %q", tc.name, r.status, r.body, tc.status, tc.msg)
		}
	}
	if err := h.Poll(); err != nil {
		t.Fatal(err)
	}
	if got := h.Output("events"); len(got) != 0 {
		t.Fatalf("refused bodies produced %v", values(got))
	}
	if st.BadRequests.Load() != 8 {
		t.Fatalf("Stats.BadRequests: got %d, want 8", st.BadRequests.Load())
	}
	c := post(t.Context(), nethttp.DefaultClient, url(), "application/x-ndjson", "{\"id\":\"k\",\"v\":1}\n\n{\"id\":\"l\"}\n", bearer())
	pollTake(t, h, 2)
	if r := await(t, c); r.status != 200 {
		t.Fatalf("good body: got %d %s", r.status, r.body)
	}
}

// A full queue answers 429 with Retry-After; once Poll takes the queued
// request the next is accepted.
func TestSourceFullQueueAnswers429(t *testing.T) {
	st := new(shttp.Stats)
	h, url := startSource(t, shttp.SourceConfig{Tokens: []string{token}, Stats: st, QueueRequests: 1, RetryAfter: 2 * time.Second},
		sdktest.WithGuarantee(sdk.NoGuarantee))
	first := post(t.Context(), nethttp.DefaultClient, url(), "application/json", `["a"]`, bearer())
	sluicetest.WaitFor(t, 10*time.Second, "the first request queued", func() bool { return st.Queued.Load() == 1 })
	r := await(t, post(t.Context(), nethttp.DefaultClient, url(), "application/json", `["b"]`, bearer()))
	if r.status != nethttp.StatusTooManyRequests || r.retryAfter != "2" {
		t.Fatalf("with the queue full: got %d Retry-After %q, want 429 Retry-After 2", r.status, r.retryAfter)
	}
	if st.Throttled.Load() != 1 {
		t.Fatalf("Stats.Throttled: got %d, want 1", st.Throttled.Load())
	}
	if got := pollTake(t, h, 1); !slices.Equal(got, []string{`"a"`}) {
		t.Fatalf("records: got %v", got)
	}
	if r := await(t, first); r.status != 200 {
		t.Fatalf("queued request: got %d", r.status)
	}
	second := post(t.Context(), nethttp.DefaultClient, url(), "application/json", `["b"]`, bearer())
	pollTake(t, h, 1)
	if r := await(t, second); r.status != 200 {
		t.Fatalf("after the queue drained: got %d %s", r.status, r.body)
	}
}

// A client that sends its header slowly (slowloris) is cut off after
// ReadHeaderTimeout.
func TestSourceCutsOffSlowClients(t *testing.T) {
	st := new(shttp.Stats)
	startSource(t, shttp.SourceConfig{Tokens: []string{token}, Stats: st, ReadHeaderTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", st.Addr(0))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = bufio.NewReader(conn).ReadString('\n')
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept a connection whose header never ended for 10 s")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cut off after %v, want about ReadHeaderTimeout (200ms)", d)
	}
}

// Exactly-once: a request is answered only once the checkpoint holding
// its records completes; a rollback answers the requests of the lost
// work 503 and their clients' retries produce them again; a retry with a
// remembered Idempotency-Key produces nothing. Every record is in the
// output once.
func TestSourceExactlyOnceThroughCheckpoints(t *testing.T) {
	st := new(shttp.Stats)
	h, url := startSource(t, shttp.SourceConfig{Tokens: []string{token}, Stats: st})
	ctx := t.Context()
	var out []string

	a := post(ctx, nethttp.DefaultClient, url(), "application/json", `["a1","a2"]`, bearer())
	out = append(out, pollTake(t, h, 2)...)
	pending(t, a, "a")
	must(t, h.Checkpoint(1))
	pending(t, a, "a")
	must(t, h.Complete(1))
	if r := await(t, a); r.status != 200 || !strings.Contains(r.body, "accepted 2 records") {
		t.Fatalf("a after checkpoint 1 completed: got %d %s, want 200 accepted 2 records", r.status, r.body)
	}

	key := map[string]string{"Authorization": "Bearer " + token, shttp.HeaderIdempotencyKey: "b-1"}
	b := post(ctx, nethttp.DefaultClient, url(), "application/json", `["b1"]`, key)
	pollTake(t, h, 1) // rolled back below
	must(t, h.Checkpoint(2))
	must(t, h.Restore(1)) // a crash elsewhere: checkpoint 2 never completes
	r := await(t, b)
	if r.status != nethttp.StatusServiceUnavailable || r.retryAfter == "" {
		t.Fatalf("b after the rollback: got %d Retry-After %q, want 503 with Retry-After", r.status, r.retryAfter)
	}
	b = post(ctx, nethttp.DefaultClient, url(), "application/json", `["b1"]`, key) // the client retries
	out = append(out, pollTake(t, h, 1)...)
	again := post(ctx, nethttp.DefaultClient, url(), "application/json", `["b1"]`, key) // and again (it timed out)
	sluicetest.WaitFor(t, 10*time.Second, "the duplicate taken", func() bool {
		must(t, h.Poll())
		return st.Duplicates.Load() == 1
	})
	must(t, h.Checkpoint(3))
	must(t, h.Complete(3))
	if r := await(t, b); r.status != 200 {
		t.Fatalf("b's retry: got %d %s", r.status, r.body)
	}
	if r := await(t, again); r.status != 200 || !strings.Contains(r.body, "duplicate") {
		t.Fatalf("b's duplicate: got %d %s, want 200 duplicate", r.status, r.body)
	}

	// The process dies after checkpoint 4's barrier: the dead server's
	// client gives up and sends to the restarted instance.
	cctx, cancel := context.WithCancel(ctx)
	c := post(cctx, nethttp.DefaultClient, url(), "application/json", `["c1"]`, bearer())
	pollTake(t, h, 1)
	must(t, h.Checkpoint(4))
	must(t, h.Crash(3))
	cancel()
	<-c
	c = post(ctx, nethttp.DefaultClient, url(), "application/json", `["c1"]`, bearer())
	out = append(out, pollTake(t, h, 1)...)
	must(t, h.Checkpoint(5))
	must(t, h.Complete(5))
	if r := await(t, c); r.status != 200 {
		t.Fatalf("c after the crash: got %d %s", r.status, r.body)
	}
	if want := []string{`"a1"`, `"a2"`, `"b1"`, `"c1"`}; !slices.Equal(out, want) {
		t.Fatalf("records kept by checkpoints: got %v, want %v once each", out, want)
	}
	if _, ok := h.GetInGroup(h.Instance().FirstGroup, []byte("http/idem/b-1")); !ok {
		t.Fatal("the idempotency key is not in state")
	}
}

// At-least-once: a request is answered once the runtime reports its
// records durable; a rewind produces the records not yet durable again.
func TestSourceAtLeastOnceAnswersWhenDurable(t *testing.T) {
	h, url := startSource(t, shttp.SourceConfig{Tokens: []string{token}}, sdktest.WithGuarantee(sdk.AtLeastOnce))
	a := post(t.Context(), nethttp.DefaultClient, url(), "application/json", `["a"]`, bearer())
	pollTake(t, h, 1)
	pending(t, a, "a")
	must(t, h.MarkDurable())
	if r := await(t, a); r.status != 200 {
		t.Fatalf("a once durable: got %d", r.status)
	}
	b := post(t.Context(), nethttp.DefaultClient, url(), "application/json", `["b"]`, bearer())
	pollTake(t, h, 1)
	must(t, h.Rewind())
	if got := pollTake(t, h, 1); !slices.Equal(got, []string{`"b"`}) {
		t.Fatalf("after the rewind: got %v, want b again", got)
	}
	pending(t, b, "b")
	must(t, h.MarkDurable())
	if r := await(t, b); r.status != 200 {
		t.Fatalf("b once durable: got %d", r.status)
	}
}

func TestSourceConfigRefused(t *testing.T) {
	for name, cfg := range map[string]shttp.SourceConfig{
		"no auth":     {Name: "h", Output: "o", Listen: ":0"},
		"short token": {Name: "h", Output: "o", Listen: ":0", Tokens: []string{"short"}},
		"bad listen":  {Name: "h", Output: "o", Listen: "8080", Insecure: true},
		"tls no cert": {Name: "h", Output: "o", Listen: ":0", TLS: &shttp.ServerTLS{ClientAuth: creds.RequireClientCert}},
	} {
		if _, err := shttp.NewSource(cfg); !errors.Is(err, shttp.ErrConfig) {
			t.Errorf("%s: got %v, want ErrConfig", name, err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Under exactly-once requests wait for their checkpoint; beyond
// MaxWaiting of them the source answers 429 with Retry-After.
func TestSourceBoundsWaitingRequests(t *testing.T) {
	st := new(shttp.Stats)
	h, url := startSource(t, shttp.SourceConfig{Tokens: []string{token}, Stats: st, MaxWaiting: 1})
	a := post(t.Context(), nethttp.DefaultClient, url(), "application/json", `["a"]`, bearer())
	pollTake(t, h, 1)
	r := await(t, post(t.Context(), nethttp.DefaultClient, url(), "application/json", `["b"]`, bearer()))
	if r.status != nethttp.StatusTooManyRequests || r.retryAfter == "" || !strings.Contains(r.body, "MaxWaiting") {
		t.Fatalf("with one request waiting: got %d Retry-After %q %s, want 429 naming MaxWaiting", r.status, r.retryAfter, r.body)
	}
	must(t, h.Checkpoint(1))
	must(t, h.Complete(1))
	if r := await(t, a); r.status != 200 {
		t.Fatalf("a: got %d", r.status)
	}
	b := post(t.Context(), nethttp.DefaultClient, url(), "application/json", `["b"]`, bearer())
	pollTake(t, h, 1)
	must(t, h.Checkpoint(2))
	must(t, h.Complete(2))
	if r := await(t, b); r.status != 200 {
		t.Fatalf("b once a was answered: got %d %s", r.status, r.body)
	}
}
