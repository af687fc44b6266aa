package http_test

import (
	"bytes"
	"context"
	"io"
	nethttp "net/http"
	"testing"
	"time"

	shttp "github.com/sluicehq/sluice/connectors/http"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/sdktest"
)

const token = "0123456789abcdef0123456789abcdef"

// reply is what a client of the source got.
type reply struct {
	status     int
	body       string
	retryAfter string
	err        error
}

// post sends body to url and returns the answer on a channel (the source
// answers once the records are durable, so a test goes on meanwhile).
func post(ctx context.Context, client *nethttp.Client, url, contentType, body string, header map[string]string) <-chan reply {
	out := make(chan reply, 1)
	go func() {
		req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodPost, url, bytes.NewBufferString(body))
		if err != nil {
			out <- reply{err: err}
			return
		}
		req.Header.Set("Content-Type", contentType)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			out <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- reply{status: resp.StatusCode, body: string(b), retryAfter: resp.Header.Get("Retry-After"), err: nil}
	}()
	return out
}

func bearer() map[string]string { return map[string]string{"Authorization": "Bearer " + token} }

// await returns the reply, failing the test after 10 s.
func await(t *testing.T, c <-chan reply) reply {
	t.Helper()
	select {
	case r := <-c:
		if r.err != nil {
			t.Fatalf("request failed: %v", r.err)
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10 s")
	}
	return reply{}
}

// pending fails the test if c has an answer already.
func pending(t *testing.T, c <-chan reply, what string) {
	t.Helper()
	select {
	case r := <-c:
		t.Fatalf("%s was answered %d %q before its records were durable", what, r.status, r.body)
	default:
	}
}

// startSource starts a harness of a webhook source on a loopback port
// picked at run time and returns it with its URL.
func startSource(t *testing.T, cfg shttp.SourceConfig, opts ...sdktest.Option) (*sdktest.Harness, func() string) {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name, cfg.Output = "hook", "events"
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Stats == nil {
		cfg.Stats = new(shttp.Stats)
	}
	f, err := shttp.NewSource(cfg)
	h := harness(t, f, err, opts...)
	url := func() string { return "http://" + cfg.Stats.Addr(0) + "/" }
	return h, url
}

// pollTake polls h until "events" holds n records, and takes them.
func pollTake(t *testing.T, h *sdktest.Harness, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(h.Output("events")) < n {
		if err := h.Poll(); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("produced %d records, want %d", len(h.Output("events")), n)
		}
	}
	return values(h.Take("events"))
}

func values(recs []sdk.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Value))
	}
	return out
}

// harness runs the operator f (err: NewSource's or NewSink's) in a
// harness closed when the test ends.
func harness(t *testing.T, f sdk.Factory, err error, opts ...sdktest.Option) *sdktest.Harness {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	h, err := sdktest.New(f, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}
