package mesos

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/mesos/mesos-go/api/v1/lib/httpcli/apierrors"
)

// masterProbe is the http.RoundTripper of one subscription: it passes
// every call to the master and remembers what the master said about its
// leadership, which mesos-go's client turns into opaque errors:
//
//   - 307 Temporary Redirect: this master does not lead; Location names the
//     leader, as a protocol-relative URL ("//host:port/api/v1/scheduler",
//     Master::Http::redirect), resolved here against the request's URL;
//   - 503 Service Unavailable: no leader is elected ("No leader elected")
//     or this master was just elected and has not recovered its state yet
//     ("Master has not finished recovery");
//   - 401 Unauthorized: the master authenticates frameworks and refused
//     the credentials; its WWW-Authenticate challenge goes into the error
//     (explainUnauthorized).
//
// The subscriber reads it when the subscription ends (after), and follows
// the redirect at once, or asks the same master again after a backoff.
type masterProbe struct {
	next http.RoundTripper

	mu          sync.Mutex
	leader      string // endpoint a 307 pointed to
	unavailable string // body of the last 503
	challenge   string // WWW-Authenticate of the last 401
}

var _ http.RoundTripper = (*masterProbe)(nil)

func (p *masterProbe) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	switch resp.StatusCode {
	case http.StatusTemporaryRedirect:
		if loc := resp.Header.Get("Location"); loc != "" {
			if u, err := req.URL.Parse(loc); err == nil && u.Host != "" {
				p.mu.Lock()
				p.leader = u.String()
				p.mu.Unlock()
			}
		}
	case http.StatusUnauthorized:
		p.mu.Lock()
		p.challenge = resp.Header.Get("WWW-Authenticate")
		p.mu.Unlock()
	case http.StatusServiceUnavailable:
		// Keep the body for mesos-go, which puts it into its error.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, apierrors.MaxSizeDetails))
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		msg := strings.TrimSpace(string(body))
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		p.mu.Lock()
		p.unavailable = msg
		p.mu.Unlock()
	}
	return resp, nil
}

// after returns what the master said: the leader it redirected to, and
// the reason it was unavailable ("" for none).
func (p *masterProbe) after() (leader, unavailable string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader, p.unavailable
}

// authChallenge returns the WWW-Authenticate header of the last 401
// answer ("" for none).
func (p *masterProbe) authChallenge() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.challenge
}
