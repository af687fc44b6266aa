package mesos_test

import (
	"io"
	"net"
	"sync"
	"testing"
)

// faultProxy forwards TCP connections to a target (e.g. Consul) until it
// is cut: then it closes every forwarded connection, and the connections
// it accepts meanwhile are held open without an answer, as across a
// network partition (requests hang until their timeouts). restore closes
// the held connections and forwards again.
type faultProxy struct {
	t      *testing.T
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool // forwarded (both ends) and held connections
	wg    sync.WaitGroup
}

func newFaultProxy(t *testing.T, target string) *faultProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{t: t, ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the address to connect to instead of the target.
func (p *faultProxy) Addr() string { return p.ln.Addr().String() }

func (p *faultProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = true
		cut := p.cut
		p.mu.Unlock()
		if cut {
			p.wg.Add(1)
			go func() { // held: read and drop until closed
				defer p.wg.Done()
				_, _ = io.Copy(io.Discard, c)
			}()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[up] = true
		p.mu.Unlock()
		p.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer p.wg.Done()
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		go pipe(up, c)
		go pipe(c, up)
	}
}

// closeAll closes every connection.
func (p *faultProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Cut starts the partition.
func (p *faultProxy) Cut() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
	p.closeAll()
}

// Restore ends it.
func (p *faultProxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
	p.closeAll()
}

func (p *faultProxy) close() {
	p.ln.Close()
	p.closeAll()
	p.wg.Wait()
}
