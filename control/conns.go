package control

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// connTracker bounds the connections the API holds without ever blocking
// its Accept, so that idle connections cannot lock an administrator out:
// past Limits.MaxConns the oldest idle connection is closed, one that never
// authenticated before one that did; past Limits.MaxConnsPerClient from
// one IP address, that client's own oldest idle one. When every
// connection is busy the new one is closed at once. A connection that has
// not authenticated waits Limits.UnauthIdleTimeout for its next request,
// not Limits.IdleTimeout.
//
// It sees the raw connections (under TLS), which it closes without a TLS
// alert that could block.
type connTracker struct {
	max, perClient int
	unauthIdle     time.Duration

	mu    sync.Mutex
	conns map[net.Conn]*trackedConn
	byIP  map[string]int
}

// trackedConn is one connection as the tracker knows it.
type trackedConn struct {
	raw   net.Conn
	ip    string
	state http.ConnState // StateNew, StateActive or StateIdle; guarded by the tracker's mu
	since time.Time      // when it entered state
	// authed is set once a request on it authenticated; guarded by mu.
	authed bool
	timer  *time.Timer // the unauthenticated idle timeout, while idle
}

// newConnTracker returns a tracker for lim.
func newConnTracker(lim Limits) *connTracker {
	return &connTracker{max: lim.MaxConns, perClient: lim.MaxConnsPerClient, unauthIdle: lim.UnauthIdleTimeout,
		conns: map[net.Conn]*trackedConn{}, byIP: map[string]int{}}
}

// listener wraps l so that every accepted connection is admitted by t.
func (t *connTracker) listener(l net.Listener) net.Listener {
	return &trackedListener{Listener: l, t: t}
}

type trackedListener struct {
	net.Listener
	t *connTracker
}

// Accept returns the next connection the tracker admits.
func (l *trackedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.t.admit(c) {
			return c, nil
		}
	}
}

// admit records c, making room by closing idle connections; it closes c
// and returns false when there is none to close.
func (t *connTracker) admit(c net.Conn) bool {
	ip := remoteIP(c)
	var evict []net.Conn
	t.mu.Lock()
	ok := true
	if t.perClient > 0 && t.byIP[ip] >= t.perClient {
		ok = t.evictLocked(func(tc *trackedConn) bool { return tc.ip == ip }, &evict)
	}
	if ok && len(t.conns) >= t.max {
		ok = t.evictLocked(func(*trackedConn) bool { return true }, &evict)
	}
	if ok {
		t.conns[c] = &trackedConn{raw: c, ip: ip, state: http.StateNew, since: time.Now()}
		t.byIP[ip]++
	}
	t.mu.Unlock()
	for _, e := range evict {
		_ = e.Close()
	}
	if !ok {
		_ = c.Close()
	}
	return ok
}

// evictLocked forgets the oldest idle connection that match admits, one
// that never authenticated first, and adds it to evict to be closed. It
// reports whether there was one.
func (t *connTracker) evictLocked(match func(*trackedConn) bool, evict *[]net.Conn) bool {
	var best *trackedConn
	for _, tc := range t.conns {
		if tc.state == http.StateActive || !match(tc) {
			continue
		}
		if best == nil || (best.authed && !tc.authed) || (best.authed == tc.authed && tc.since.Before(best.since)) {
			best = tc
		}
	}
	if best == nil {
		return false
	}
	t.forgetLocked(best)
	*evict = append(*evict, best.raw)
	return true
}

// forgetLocked removes tc.
func (t *connTracker) forgetLocked(tc *trackedConn) {
	if tc.timer != nil {
		tc.timer.Stop()
	}
	delete(t.conns, tc.raw)
	if t.byIP[tc.ip]--; t.byIP[tc.ip] <= 0 {
		delete(t.byIP, tc.ip)
	}
}

// connState is the http.Server's ConnState hook.
func (t *connTracker) connState(c net.Conn, state http.ConnState) {
	raw := rawConn(c)
	t.mu.Lock()
	defer t.mu.Unlock()
	tc := t.conns[raw]
	if tc == nil {
		return // evicted
	}
	if state == http.StateClosed || state == http.StateHijacked {
		t.forgetLocked(tc)
		return
	}
	if tc.timer != nil {
		tc.timer.Stop()
		tc.timer = nil
	}
	tc.state, tc.since = state, time.Now()
	if state == http.StateIdle && !tc.authed && t.unauthIdle > 0 {
		since := tc.since
		tc.timer = time.AfterFunc(t.unauthIdle, func() { t.closeIfIdleSince(tc, since) })
	}
}

// closeIfIdleSince closes tc if it is still idle since since.
func (t *connTracker) closeIfIdleSince(tc *trackedConn, since time.Time) {
	t.mu.Lock()
	idle := t.conns[tc.raw] == tc && tc.state == http.StateIdle && tc.since.Equal(since)
	if idle {
		t.forgetLocked(tc)
	}
	t.mu.Unlock()
	if idle {
		_ = tc.raw.Close()
	}
}

// connKey is the context key of a request's tracked connection.
type connKey struct{}

// connContext is the http.Server's ConnContext hook.
func (t *connTracker) connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, rawConn(c))
}

// authenticated marks the connection of a request that authenticated.
func (t *connTracker) authenticated(r *http.Request) {
	raw, _ := r.Context().Value(connKey{}).(net.Conn)
	t.mu.Lock()
	if tc := t.conns[raw]; tc != nil {
		tc.authed = true
	}
	t.mu.Unlock()
}

// rawConn returns the connection under a TLS one.
func rawConn(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}

// remoteIP returns the IP address of c's peer, or its whole address.
func remoteIP(c net.Conn) string {
	addr := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
