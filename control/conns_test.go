package control_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/control"
	"github.com/sluicehq/sluice/creds/credstest"
)

// idleConn opens a connection, makes one request on it without
// credentials and keeps it alive, idle. A connection the server closes
// unanswered (it holds too many of this client's) is retried for a while.
func idleConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			_ = c.SetReadDeadline(time.Time{})
			t.Cleanup(func() { c.Close() })
			return c
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no connection served: %v", err)
		}
	}
}

// roundTrip sends req on c and reads one answer, returning its status.
func roundTrip(t *testing.T, c net.Conn, req string) int {
	t.Helper()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read the answer to %q: %v", strings.SplitN(req, "\r\n", 2)[0], err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = c.SetReadDeadline(time.Time{})
	return resp.StatusCode
}

// TestIdleConnectionsCannotLockOutAnAdmin: a client holding more idle
// keep-alive connections than MaxConns does not keep an administrator's
// request from being answered (accepting waited for a free slot, and
// /v1/status timed out for 40+ s with 1,100 idle connections).
func TestIdleConnectionsCannotLockOutAnAdmin(t *testing.T) {
	tokens := credstest.TokenFile(t, "admin:"+adminToken)
	srv := serveWith(t, control.Config{Security: control.Security{TokensFile: tokens},
		Limits: control.Limits{MaxConns: 32, MaxConnsPerClient: 1000}})
	for range 40 {
		idleConn(t, srv.Addr())
	}
	admin := caller{t: t, base: "http://" + srv.Addr(), token: adminToken, http: &http.Client{Timeout: 10 * time.Second}}
	for i := range 3 { // each on a new connection
		admin.http.CloseIdleConnections()
		code, _, err := admin.try("GET", "/v1/node", nil, nil)
		if err != nil || code != http.StatusOK {
			t.Fatalf("admin request %d beside 40 idle connections: %d %v, want 200", i, code, err)
		}
	}
}

// busyConn opens a connection whose request stays in flight: the
// console's event stream, whose answer's headers have arrived.
func busyConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET /v1/console/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("console events: %v %v", resp, err)
	}
	return c
}

// TestConnectionsPerClientAreBounded: a client whose MaxConnsPerClient
// connections are all busy has its next one closed at once, unanswered;
// when its connections are idle, a new one closes one of them and is
// served.
func TestConnectionsPerClientAreBounded(t *testing.T) {
	srv := serveWith(t, control.Config{Limits: control.Limits{MaxConnsPerClient: 4}})
	var busy []net.Conn
	for range 4 {
		busy = append(busy, busyConn(t, srv.Addr()))
	}
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
		t.Fatalf("a fifth connection beside four busy ones was answered %s, want it closed", resp.Status)
	}
	c.Close()
	for _, b := range busy {
		b.Close()
	}

	// Four idle connections (once the server sees them idle): a fifth
	// closes one of them.
	idle := make([]net.Conn, 4)
	closed := make(chan int, len(idle))
	for i := range idle {
		idle[i] = idleConn(t, srv.Addr())
	}
	for i, ic := range idle {
		go func() {
			_ = ic.SetReadDeadline(time.Now().Add(time.Minute))
			_, _ = io.Copy(io.Discard, ic)
			closed <- i
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) { // the four never became idle
			t.Fatalf("a new connection beside four idle ones was not served: %v", err)
		}
	}
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the server served a fifth connection and closed none of the client's four idle ones")
	}
}

// TestUnauthenticatedConnectionsIdleShorter: a connection that has not
// authenticated is closed after UnauthIdleTimeout; one that did stays for
// IdleTimeout.
func TestUnauthenticatedConnectionsIdleShorter(t *testing.T) {
	tokens := credstest.TokenFile(t, "admin:"+adminToken)
	srv := serveWith(t, control.Config{Security: control.Security{TokensFile: tokens},
		Limits: control.Limits{UnauthIdleTimeout: 200 * time.Millisecond, IdleTimeout: 10 * time.Minute}})
	authed, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer authed.Close()
	req := "GET /v1/node HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + adminToken + "\r\n\r\n"
	if code := roundTrip(t, authed, req); code != http.StatusOK {
		t.Fatalf("authenticated request = %d", code)
	}
	anon := idleConn(t, srv.Addr())
	closedByServer(t, anon, 30*time.Second)
	if code := roundTrip(t, authed, req); code != http.StatusOK {
		t.Fatalf("the authenticated connection after the other was closed = %d", code)
	}
}
