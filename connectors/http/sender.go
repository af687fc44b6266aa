package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/sdk"
)

// batch is a POST of the sink: its records' values as JSON lines and its
// Idempotency-Key.
type batch struct {
	recs []sdk.Record // the records, for dead letters
	body []byte
	key  string
}

// add appends rec's value (compacted to one line) to b; a value that is
// not JSON is refused.
func (b *batch) add(rec sdk.Record) error {
	var line bytes.Buffer
	if err := json.Compact(&line, rec.Value); err != nil {
		return fmt.Errorf("the value is not JSON: %w", err)
	}
	b.body = append(append(b.body, line.Bytes()...), '\n')
	b.recs = append(b.recs, rec)
	return nil
}

// outcome is how a batch's delivery ended.
type outcome struct {
	err      error  // not delivered (retryable failures exhausted, or stopped)
	rejected string // answered 4xx DeadLetterAfter times: why
}

// sender POSTs batches to the sink's URL with retries.
type sender struct {
	cfg    SinkConfig
	client *nethttp.Client
	files  *creds.Source
}

func newSender(cfg SinkConfig) (*sender, error) {
	tr := nethttp.DefaultTransport.(*nethttp.Transport).Clone()
	s := &sender{cfg: cfg, client: &nethttp.Client{Transport: tr, Timeout: cfg.RequestTimeout}}
	if cfg.TLS != nil {
		files, err := creds.Load(*cfg.TLS)
		if err != nil {
			return nil, fmt.Errorf("%w: SinkConfig.TLS: %w", ErrConfig, err)
		}
		u, err := url.Parse(cfg.URL)
		if err != nil {
			files.Close()
			return nil, fmt.Errorf("%w: SinkConfig.URL: %w", ErrConfig, err)
		}
		tc, err := files.ClientTLS(u.Hostname())
		if err != nil {
			files.Close()
			return nil, fmt.Errorf("%w: SinkConfig.TLS: %w", ErrConfig, err)
		}
		tr.TLSClientConfig, s.files = tc, files
	}
	return s, nil
}

func (s *sender) close() {
	s.client.CloseIdleConnections()
	if s.files != nil {
		s.files.Close()
	}
}

// deliver POSTs b until it is accepted (2xx), rejected (another 4xx,
// DeadLetterAfter times), MaxAttempts attempts failed, or ctx ends.
func (s *sender) deliver(ctx context.Context, b *batch) outcome {
	st := s.cfg.Stats
	delays := backoff.New(s.cfg.MinBackoff, s.cfg.MaxBackoff, 0.2)
	rejects := 0
	var last error
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			st.Retries.Add(1)
		}
		status, retryAfter, msg, err := s.post(ctx, b)
		switch {
		case err == nil && status/100 == 2:
			st.Records.Add(int64(len(b.recs)))
			st.Bytes.Add(int64(len(b.body)))
			return outcome{}
		case err == nil && status/100 == 4 && status != nethttp.StatusTooManyRequests && status != nethttp.StatusRequestTimeout:
			rejects++
			last = fmt.Errorf("answered %d %s", status, msg)
			if rejects >= s.cfg.DeadLetterAfter {
				return outcome{rejected: fmt.Sprintf("%s answered %d: %s", s.cfg.URL, status, msg)}
			}
		case err != nil:
			last = err
		default:
			last = fmt.Errorf("answered %d %s", status, msg)
		}
		if attempt >= s.cfg.MaxAttempts {
			st.Failures.Add(1)
			return outcome{err: fmt.Errorf("%w: %w: POST %s: %d attempts, the last: %w", sdk.ErrTransient, ErrDelivery, s.cfg.URL, attempt, last)}
		}
		d := delays.Next()
		if retryAfter > 0 {
			d = min(retryAfter, s.cfg.MaxBackoff)
		}
		if !backoff.Sleep(ctx, d) {
			return outcome{err: fmt.Errorf("%w: POST %s: stopped after %d attempts: %w", ErrDelivery, s.cfg.URL, attempt, errors.Join(ctx.Err(), last))}
		}
	}
}

// post sends b once; it returns the status, the Retry-After asked and
// the start of the answer's body.
func (s *sender) post(ctx context.Context, b *batch) (int, time.Duration, string, error) {
	s.cfg.Stats.Requests.Add(1)
	req, err := nethttp.NewRequestWithContext(ctx, nethttp.MethodPost, s.cfg.URL, bytes.NewReader(b.body))
	if err != nil {
		return 0, 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set(HeaderIdempotencyKey, b.key)
	if s.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.cfg.Token)
	}
	for k, v := range s.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, 0, "", err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // reuse the connection
	return resp.StatusCode, retryAfter(resp.Header.Get("Retry-After")), string(bytes.TrimSpace(msg)), nil
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := nethttp.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
