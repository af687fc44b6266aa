package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluicehq/sluice/control/api"
)

// maxBody bounds what sluice reads of an answer.
const maxBody = 64 << 20

// client calls the control API of one node. See control/api.go for the
// endpoints and their JSON.
type client struct {
	base    *url.URL // scheme, host and path prefix, no trailing slash
	http    *http.Client
	timeout time.Duration
	creds   credentials
	warn    io.Writer // where the warning about a token over plain HTTP goes; nil once given
}

// newClient returns a client of the control API at addr: "host:port", or
// an http:// or https:// URL, possibly with a path prefix (behind a
// proxy); host:port means https:// when c asks for TLS. timeout bounds
// each request; 0 means none.
func newClient(addr string, timeout time.Duration, c credentials) (*client, error) {
	scheme := "http"
	if c.tls() {
		scheme = "https"
	}
	base, err := parseAddr(addr, scheme)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if base.Scheme == "https" {
		if tr.TLSClientConfig, err = c.tlsConfig(base.Hostname()); err != nil {
			return nil, err
		}
	} else if c.tls() {
		return nil, &usageError{fmt.Errorf("--ca, --cert and --key are for HTTPS, and %s is plain HTTP: use an https:// address", addr)}
	}
	return &client{base: base, http: &http.Client{Timeout: timeout, Transport: tr,
		// The token is for this node only: never follow a redirect with it.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		timeout: timeout, creds: c}, nil
}

func parseAddr(addr, scheme string) (*url.URL, error) {
	s := strings.TrimSpace(addr)
	if !strings.Contains(s, "://") {
		s = scheme + "://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("bad address %q: want host:port or an http:// or https:// URL", addr)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("bad address %q: want http:// or https://, not %s://", addr, u.Scheme)
	case u.Host == "":
		return nil, fmt.Errorf("bad address %q: no host", addr)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return nil, fmt.Errorf("bad address %q: want scheme://host:port[/path] only", addr)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// do sends a request to path (with query, and in as its JSON body if not
// nil) and returns the body of a 2xx answer. Any other answer is an
// *apiError; failing to reach the node is an error naming the address.
func (c *client) do(ctx context.Context, method, path string, query url.Values, in any) ([]byte, error) {
	req, err := c.request(ctx, method, path, query, in)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.unreachable(method, err)
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read answer: %w", method, req.URL.Redacted(), err)
	}
	if resp.StatusCode/100 != 2 {
		e := answerError(method, path, resp, out)
		c.explainStatus(e, out)
		return nil, e
	}
	return out, nil
}

// request builds a request of path (with query, and in as its JSON body if
// not nil), with the credentials.
func (c *client) request(ctx context.Context, method, path string, query url.Values, in any) (*http.Request, error) {
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.creds.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.creds.token)
		c.warnPlainToken(&u)
	}
	return req, nil
}

// stream GETs path and returns the body of a 2xx answer to be read as it
// comes, until ctx ends: the time limit (--timeout) bounds only the wait
// for the answer's header. Other answers are errors as in do.
func (c *client) stream(ctx context.Context, path string, query url.Values) (io.ReadCloser, error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := c.request(ctx, http.MethodGet, path, query, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	var timer *time.Timer
	if c.timeout > 0 {
		timer = time.AfterFunc(c.timeout, cancel)
	}
	hc := *c.http
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if timer != nil && !timer.Stop() { // the time limit passed
		cancel()
		if err == nil {
			_ = resp.Body.Close()
		}
		return nil, fmt.Errorf("GET %s: no answer within %v (--timeout)", req.URL.Redacted(), c.timeout)
	}
	if err != nil {
		cancel()
		return nil, c.unreachable(http.MethodGet, err)
	}
	if resp.StatusCode/100 != 2 {
		defer cancel()
		defer func() { _ = resp.Body.Close() }()
		out, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		e := answerError(http.MethodGet, path, resp, out)
		c.explainStatus(e, out)
		return nil, e
	}
	return cancelOnClose{resp.Body, cancel}, nil
}

// cancelOnClose is an answer's body that ends its request's context when
// closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// unreachable explains a request that got no answer.
func (c *client) unreachable(method string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() && c.timeout > 0 {
			return fmt.Errorf("%s %s: no answer within %v (--timeout)", method, ue.URL, c.timeout)
		}
		if why, ok := c.explainTLS(ue.Err); ok {
			return &tlsError{msg: fmt.Sprintf("%s %s: %s", method, ue.URL, why), err: ue.Err}
		}
		err = fmt.Errorf("%s %s: %w", method, ue.URL, ue.Err)
	}
	return fmt.Errorf("%w (is a Sluice node's control API at %s? set --addr or $SLUICE_ADDR)", err, c.base.Redacted())
}

// answerError turns a non-2xx answer into an *apiError, with the server's
// api.Error if the body is one, else the body's text.
func answerError(method, path string, resp *http.Response, body []byte) *apiError {
	e := &apiError{Method: method, Path: path, Status: resp.StatusCode}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/json" && json.Unmarshal(body, &e.Body) == nil && e.Body.Error != "" {
		return e
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	msg := fmt.Sprintf("%s %s: %s", method, path, resp.Status)
	if text != "" {
		msg += ": " + text
	}
	e.Body = api.Error{Error: msg}
	return e
}

// getJSON GETs path and decodes the answer into out; it returns the raw
// answer too, for --json.
func (c *client) getJSON(ctx context.Context, path string, query url.Values, out any) ([]byte, error) {
	raw, err := c.do(ctx, http.MethodGet, path, query, nil)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("GET %s: unexpected answer: %w", path, err)
	}
	return raw, nil
}

// change sends a change (deploy, scale, kill) and decodes its answer.
func (c *client) change(ctx context.Context, method, path string, query url.Values, in any) (api.DeployResponse, []byte, error) {
	var resp api.DeployResponse
	raw, err := c.do(ctx, method, path, query, in)
	if err != nil {
		return resp, nil, err
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return resp, nil, fmt.Errorf("%s %s: unexpected answer: %w", method, path, err)
	}
	return resp, raw, nil
}

// operatorPath returns the path of an operator's resource. Callers check
// the name first (checkName), so it needs no escaping.
func operatorPath(name string) string { return "/v1/operators/" + name }
