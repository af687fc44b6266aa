package sluicetest

import (
	"net"
	"testing"
)

// FreePort returns a loopback TCP port nothing listens on now: for tests
// that need an address where no server answers (or one to start a server
// on, accepting that another process may take it first).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
