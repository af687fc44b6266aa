package consul_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/cluster/clustertest"
	"github.com/sluicehq/sluice/cluster/consul"
	"github.com/sluicehq/sluice/internal/consultest"
)

// Environment of the helper process of TestFailureDetectionSIGKILL.
const (
	helperAddr    = "SLUICE_CONSUL_TEST_HELPER_ADDR"
	helperService = "SLUICE_CONSUL_TEST_HELPER_SERVICE"
	helperID      = "SLUICE_CONSUL_TEST_HELPER_ID"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(helperAddr); addr != "" {
		os.Exit(helperMember(addr, os.Getenv(helperService), os.Getenv(helperID)))
	}
	os.Exit(m.Run())
}

// helperMember is the body of the helper process: join, say so on stdout,
// heartbeat until stdin closes (the parent died) or the process is killed.
func helperMember(addr, service, id string) int {
	d, err := consul.New(consul.Config{Address: addr, Service: service})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := d.Join(context.Background(), clustertest.Member(id, 7)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("joined")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

var serviceSeq atomic.Int64

// newService returns a service name no other test uses, so tests can share
// one agent without seeing each other's members.
func newService() string { return fmt.Sprintf("sluice-t%d", serviceSeq.Add(1)) }

// testLogger sends the backend's log to t.Log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// newNode returns an unjoined Discovery on agent address addr, left at the
// end of the test.
func newNode(t testing.TB, addr, service string) *consul.Discovery {
	t.Helper()
	d, err := consul.New(consul.Config{Address: addr, Service: service, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Leave(context.Background()); err != nil {
			t.Logf("cleanup: Leave: %v", err)
		}
	})
	return d
}

type backend struct {
	addr, service string
}

func (b backend) NewNode(t testing.TB) cluster.Discovery { return newNode(t, b.addr, b.service) }

func (b backend) Crash(_ testing.TB, d cluster.Discovery, _ string) { d.(*consul.Discovery).Crash() }

func TestConformance(t *testing.T) {
	agent := consultest.Start(t)
	clustertest.RunDiscoverySuite(t, func(*testing.T) clustertest.Backend {
		return backend{addr: agent.Addr(), service: newService()}
	})
}

func join(t testing.TB, d cluster.Discovery, m cluster.Member) {
	t.Helper()
	if err := d.Join(t.Context(), m); err != nil {
		t.Fatalf("Join(%s): %v", m.ID, err)
	}
}

// The catalog shows what `consul catalog services -tags` and
// `consul catalog nodes -service sluice -detailed` would: the service name,
// the kinds as tags, the addresses, version and metadata in service meta,
// and a passing TTL check.
func TestCatalogMetadata(t *testing.T) {
	agent := consultest.Start(t)
	service := newService()
	m := clustertest.Member("node-1", 1)
	join(t, newNode(t, agent.Addr(), service), m)

	services, _, err := agent.Client().Catalog().Services(nil)
	if err != nil {
		t.Fatalf("Catalog().Services: %v", err)
	}
	wantTags := []string{"map", "source.kafka", "window.tumbling"}
	if got := slices.Sorted(slices.Values(services[service])); !slices.Equal(got, wantTags) {
		t.Errorf("tags of service %s: got %v, want %v (services: %v)", service, got, wantTags, services)
	}

	entries, _, err := agent.Client().Catalog().Service(service, "", nil)
	if err != nil || len(entries) != 1 {
		t.Fatalf("Catalog().Service(%s): got %d entries, %v; want 1", service, len(entries), err)
	}
	e := entries[0]
	if got := net.JoinHostPort(e.ServiceAddress, fmt.Sprint(e.ServicePort)); got != m.Address {
		t.Errorf("service address: got %s, want %s", got, m.Address)
	}
	if e.ServiceID != service+"-node-1" {
		t.Errorf("service ID: got %q, want %q", e.ServiceID, service+"-node-1")
	}
	wantMeta := map[string]string{
		"sluice_id":      "node-1",
		"sluice_http":    m.HTTPAddr,
		"sluice_version": m.Version,
		"sluice_kinds":   "map,source.kafka,window.tumbling",
		"zone":           "z1",
		"node-index":     "1",
	}
	for k, want := range wantMeta {
		if got, ok := e.ServiceMeta[k]; !ok || got != want {
			t.Errorf("service meta %q: got %q (present %v), want %q", k, got, ok, want)
		}
	}
	if len(e.ServiceMeta) != len(wantMeta) {
		t.Errorf("service meta: got %v, want exactly %v", e.ServiceMeta, wantMeta)
	}

	checks, _, err := agent.Client().Health().Checks(service, nil)
	if err != nil || len(checks) != 1 {
		t.Fatalf("Health().Checks(%s): got %d, %v; want 1 check", service, len(checks), err)
	}
	if c := checks[0]; c.Type != "ttl" || c.Status != api.HealthPassing || c.CheckID != service+"-node-1:ttl" {
		t.Errorf("check: got type %q status %q id %q, want a passing ttl check %s-node-1:ttl", c.Type, c.Status, c.CheckID, service)
	}
	// DeregisterCriticalServiceAfter is not reported back by Consul's
	// API for TTL checks, so it cannot be asserted here.
}

// A member killed with SIGKILL (a real process, no test hook) drops out of
// the other members' snapshots within clustertest.DetectionBudget.
func TestFailureDetectionSIGKILL(t *testing.T) {
	agent := consultest.Start(t)
	service := newService()
	observer := newNode(t, agent.Addr(), service)
	join(t, observer, clustertest.Member("observer", 1))
	w := clustertest.Watch(t, "observer", observer)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperAddr+"="+agent.Addr(), helperService+"="+service, helperID+"=victim")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe() // the helper exits if this test process dies
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	joined := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && line != "joined\n" {
			err = fmt.Errorf("helper said %q", line)
		}
		joined <- err
	}()
	select {
	case err := <-joined:
		if err != nil {
			t.Fatalf("helper: %v", err)
		}
	case <-time.After(clustertest.Timeout):
		t.Fatalf("helper did not join within %v", clustertest.Timeout)
	}
	w.WaitIDs(t, clustertest.Timeout, "observer", "victim")

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL: %v", err)
	}
	got := w.WaitIDs(t, clustertest.DetectionBudget, "observer")
	t.Logf("SIGKILL of a member detected after %v (TTL %v, heartbeat %v, budget %v)",
		got.At.Sub(start).Round(time.Millisecond), consul.DefaultTTL, consul.DefaultHeartbeatInterval, clustertest.DetectionBudget)
}

// Consul goes away for 10s and comes back empty (a restarted dev agent):
// the watchers keep the last membership while it is down, the members
// re-register by themselves, and every watcher converges without ever
// seeing a member missing.
func TestConsulRestart(t *testing.T) {
	const outage = 10 * time.Second
	agent := consultest.Start(t)
	service := newService()
	a, b := newNode(t, agent.Addr(), service), newNode(t, agent.Addr(), service)
	join(t, a, clustertest.Member("a", 1))
	join(t, b, clustertest.Member("b", 2))
	wa := clustertest.Watch(t, "a", a)
	wb := clustertest.Watch(t, "b", b)
	wo := clustertest.Watch(t, "observer", newNode(t, agent.Addr(), service))
	watchers := []*clustertest.Watcher{wa, wb, wo}
	for _, w := range watchers {
		w.WaitIDs(t, clustertest.Timeout, "a", "b")
	}

	agent.Stop()
	down := time.Now()
	time.Sleep(outage) // the outage is the scenario, not synchronisation
	for _, w := range watchers {
		if w.Closed() {
			t.Fatalf("a watch channel closed during the outage")
		}
	}
	agent.Restart()
	up := time.Now()
	t.Logf("Consul down for %v", up.Sub(down).Round(time.Millisecond))

	// Both members re-register: the catalog of the empty agent fills again.
	deadline := time.Now().Add(clustertest.Timeout)
	for {
		entries, _, err := agent.Client().Health().Service(service, "", true, nil)
		if err == nil && len(entries) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("members not re-registered %v after the restart: %d passing, err %v", clustertest.Timeout, len(entries), err)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition with a deadline
	}
	t.Logf("both members re-registered %v after the restart", time.Since(up).Round(time.Millisecond))

	for _, w := range watchers {
		w.WaitIDs(t, clustertest.Timeout, "a", "b")
		for i, s := range w.History() {
			if ids := clustertest.IDs(s.Members); !slices.Equal(ids, []string{"a", "b"}) {
				t.Errorf("snapshot %d at %s: got %v, want [a b] throughout (no empty or partial snapshot across the restart)",
					i, s.At.Format("15:04:05.000"), ids)
			}
		}
	}

	// Converged for real: heartbeats refresh the new registrations, so a
	// crash is still detected in time.
	start := time.Now()
	a.Crash()
	got := wb.WaitIDs(t, clustertest.DetectionBudget, "b")
	t.Logf("after the restart, crash of a detected in %v", got.At.Sub(start).Round(time.Millisecond))
}

// A heartbeat that finds its registration gone (deregistered behind its
// back, or reaped) registers again.
func TestReregisterWhenDeregistered(t *testing.T) {
	agent := consultest.Start(t)
	service := newService()
	a := newNode(t, agent.Addr(), service)
	join(t, a, clustertest.Member("a", 1))
	w := clustertest.Watch(t, "a", a)
	w.WaitIDs(t, clustertest.Timeout, "a")

	if err := agent.Client().Agent().ServiceDeregister(service + "-a"); err != nil {
		t.Fatalf("ServiceDeregister: %v", err)
	}
	start := time.Now()
	deadline := time.Now().Add(clustertest.Timeout)
	for {
		svcs, err := agent.Client().Agent().Services()
		if err == nil && svcs[service+"-a"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not re-registered within %v (err %v)", clustertest.Timeout, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	t.Logf("re-registered %v after an external deregistration", time.Since(start).Round(time.Millisecond))
	w.WaitIDs(t, clustertest.Timeout, "a")
}

// Join against an address where no Consul answers fails fast with an error
// that names the address and wraps cluster.ErrUnavailable.
func TestJoinBadAddress(t *testing.T) {
	refused := func(t *testing.T) string { // a port nobody listens on
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}
	silent := func(t *testing.T) string { // accepts connections, never answers
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l.Addr().String() // the kernel completes handshakes into the backlog
	}
	tests := []struct {
		name  string
		addr  func(t *testing.T) string
		retry bool // try Join again after the failure
	}{
		{"connection refused", refused, true},
		{"no answer", silent, false},
	}
	const budget = 5 * time.Second
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.addr(t)
			d := newNode(t, addr, newService())
			start := time.Now()
			err := d.Join(t.Context(), clustertest.Member("a", 1))
			took := time.Since(start)
			t.Logf("Join failed after %v: %v", took.Round(time.Millisecond), err)
			switch {
			case err == nil:
				t.Fatalf("Join: got nil, want an error")
			case !errors.Is(err, cluster.ErrUnavailable):
				t.Errorf("Join: got %v, want an error wrapping %v", err, cluster.ErrUnavailable)
			case !strings.Contains(err.Error(), addr):
				t.Errorf("Join: error %q does not name the address %s", err, addr)
			}
			if took > budget {
				t.Errorf("Join took %v, want at most %v", took, budget)
			}
			// Join may be retried once Consul is there; here it still fails.
			if !tc.retry {
				return
			}
			if err := d.Join(t.Context(), clustertest.Member("a", 1)); errors.Is(err, cluster.ErrAlreadyJoined) {
				t.Errorf("Join after a failed Join: got %v, want another attempt", err)
			}
		})
	}
}

// A watcher started while Consul is down sends nothing until it is up,
// then the real membership.
func TestWatchBeforeConsulUp(t *testing.T) {
	agent := consultest.Start(t)
	service := newService()
	agent.Stop()
	w := clustertest.Watch(t, "observer", newNode(t, agent.Addr(), service))
	agent.Restart()
	a := newNode(t, agent.Addr(), service)
	join(t, a, clustertest.Member("a", 1))
	w.WaitIDs(t, clustertest.Timeout, "a")
	for i, s := range w.History() {
		if len(s.Members) > 1 {
			t.Errorf("snapshot %d: got %v", i, clustertest.IDs(s.Members))
		}
	}
}

// A member that dies while Consul is down is kept for RecoveryGrace after
// Consul returns (it might still re-register), then dropped; the survivors
// are never dropped.
func TestMemberLostDuringOutage(t *testing.T) {
	agent := consultest.Start(t)
	service := newService()
	a, b := newNode(t, agent.Addr(), service), newNode(t, agent.Addr(), service)
	join(t, a, clustertest.Member("a", 1))
	join(t, b, clustertest.Member("b", 2))
	wa := clustertest.Watch(t, "a", a)
	wa.WaitIDs(t, clustertest.Timeout, "a", "b")

	agent.Stop()
	b.Crash() // dies during the outage: will never re-register
	agent.Restart()
	up := time.Now()
	grace := consul.DefaultConfig().RecoveryGrace
	got := wa.WaitIDs(t, grace+clustertest.DetectionBudget, "a")
	t.Logf("member lost during the outage dropped %v after Consul returned (RecoveryGrace %v)", got.At.Sub(up).Round(time.Millisecond), grace)
	for i, s := range wa.History() {
		if ids := clustertest.IDs(s.Members); !slices.Contains(ids, "a") {
			t.Errorf("snapshot %d: got %v, want a in every snapshot", i, ids)
		}
	}
}

// Leave stops and waits for every goroutine of the Discovery.
func TestLeaveStopsGoroutines(t *testing.T) {
	agent := consultest.Start(t)
	d, err := consul.New(consul.Config{Address: agent.Addr(), Service: newService()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Join(ctx, clustertest.Member("a", 1)); err != nil {
		t.Fatal(err)
	}
	var chans []<-chan []cluster.Member
	for range 3 {
		ch := d.Watch(ctx)
		<-ch // the watcher is in its query loop
		chans = append(chans, ch)
	}
	if n := ownGoroutines(); n != 4 {
		t.Fatalf("before Leave: got %d goroutines in cluster/consul, want 4 (heartbeat, 3 watchers)", n)
	}
	if err := d.Leave(ctx); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	if n := ownGoroutines(); n != 0 {
		t.Errorf("after Leave: got %d goroutines in cluster/consul, want 0:\n%s", n, stacks())
	}
	for i, ch := range chans {
		if _, ok := <-ch; ok {
			t.Errorf("watch channel %d still open after Leave", i)
		}
	}
}

func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// ownGoroutines counts the goroutines running a Discovery loop.
func ownGoroutines() int {
	n := 0
	for _, g := range strings.Split(stacks(), "\n\n") {
		if strings.Contains(g, "cluster/consul.(*Discovery).heartbeat") || strings.Contains(g, "cluster/consul.(*Discovery).watch(") {
			n++
		}
	}
	return n
}
