package consultest

import (
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

func TestStartStopRestart(t *testing.T) {
	a := Start(t)
	if host, _, _ := net.SplitHostPort(a.Addr()); host != "127.0.0.1" {
		t.Errorf("Addr: got %s, want a 127.0.0.1 address", a.Addr())
	}
	leader, err := a.Client().Status().Leader()
	if err != nil || leader == "" {
		t.Fatalf("Leader: got %q, %v; want a leader", leader, err)
	}
	reg := &api.AgentServiceRegistration{ID: "probe", Name: "probe", Port: 1}
	if err := a.Client().Agent().ServiceRegister(reg); err != nil {
		t.Fatalf("ServiceRegister: %v", err)
	}
	ports := a.Ports()

	a.Stop()
	if _, err := a.Client().Status().Leader(); err == nil {
		t.Fatalf("Leader after Stop: got no error, want the agent unreachable")
	}
	a.Stop() // idempotent

	start := time.Now()
	a.Restart()
	t.Logf("restart took %v", time.Since(start).Round(time.Millisecond))
	if a.Ports() != ports {
		t.Errorf("ports after Restart: got %+v, want %+v", a.Ports(), ports)
	}
	services, err := a.Client().Agent().Services()
	if err != nil {
		t.Fatalf("Services after Restart: %v", err)
	}
	if _, ok := services["probe"]; ok {
		t.Errorf("service registered before Restart still known: a dev agent must come back empty")
	}
	if b, err := os.ReadFile(a.LogPath()); err != nil || strings.Count(string(b), "==> proctest: starting") != 2 {
		t.Errorf("log %s: want the output of both runs (err %v)", a.LogPath(), err)
	}
}

func TestOnlyLoopbackAndPickedPorts(t *testing.T) {
	a, b := Start(t), Start(t)
	if a.Ports() == b.Ports() {
		t.Fatalf("two agents share ports %+v", a.Ports())
	}
	// Consul's own defaults must not be bound by our agents. Another
	// process on the machine could hold them, so only check ours: the
	// catalog of each agent names its own ports.
	for _, ag := range []*Agent{a, b} {
		self, err := ag.Client().Agent().Self()
		if err != nil {
			t.Fatalf("Self: %v", err)
		}
		cfg := self["DebugConfig"]
		for field, want := range map[string]float64{
			"HTTPPort": float64(ag.Ports().HTTP), "SerfPortLAN": float64(ag.Ports().SerfLAN), "ServerPort": float64(ag.Ports().Server),
			"DNSPort": -1, "HTTPSPort": -1, "GRPCPort": -1, "GRPCTLSPort": -1, "SerfPortWAN": -1,
		} {
			if got := cfg[field]; got != want {
				t.Errorf("agent %s: %s: got %v, want %v", ag.Addr(), field, got, want)
			}
		}
		if got := cfg["BindAddr"]; got != "127.0.0.1" {
			t.Errorf("agent %s: BindAddr: got %v, want 127.0.0.1", ag.Addr(), got)
		}
	}
}

func TestCleanupKillsAgent(t *testing.T) {
	var pid int
	t.Run("agent", func(t *testing.T) {
		a := Start(t)
		pid = a.runs.Pid()
	})
	// The subtest's cleanups have run: the process must be gone (reaped).
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("agent pid %d after cleanup: kill(0) = %v, want ESRCH", pid, err)
	}
}

func TestCheckBinaryRejectsOtherVersions(t *testing.T) {
	dir := t.TempDir()
	fake := dir + "/consul"
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'Consul v1.15.2'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkBinary(fake); err == nil || !strings.Contains(err.Error(), "want 1.14.x") {
		t.Errorf("checkBinary(1.15.2): got %v, want a version error", err)
	}
	if err := checkBinary(Binary(t)); err != nil {
		t.Errorf("checkBinary(%s): %v", Binary(t), err)
	}
}

// TestACLAndTLS: an agent with Options.ACL refuses requests without a
// token and accepts the management token; with Options.TLS it answers
// HTTPS only, to clients with a certificate of its CA.
func TestACLAndTLS(t *testing.T) {
	a := StartWith(t, Options{ACL: true, TLS: true})
	if a.ManagementToken() == "" || !strings.HasPrefix(a.URL(), "https://127.0.0.1:") {
		t.Fatalf("ManagementToken %q, URL %q", a.ManagementToken(), a.URL())
	}
	if _, err := a.Client().KV().Put(&api.KVPair{Key: "k", Value: []byte("v")}, nil); err != nil {
		t.Fatalf("KV put with the management token: %v", err)
	}
	tf := a.TLS()
	tlsCfg := api.TLSConfig{CAFile: tf.CA, CertFile: tf.ClientCert, KeyFile: tf.ClientKey}
	anon, err := api.NewClient(&api.Config{Address: a.URL(), TLSConfig: tlsCfg})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := anon.KV().Get("k", nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("KV get without a token: %v, want 403", err)
	}
	noCert, err := api.NewClient(&api.Config{Address: a.URL(), Token: a.ManagementToken(), TLSConfig: api.TLSConfig{CAFile: tf.CA}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := noCert.KV().Get("k", nil); err == nil {
		t.Error("KV get without a client certificate succeeded; want the TLS handshake refused")
	}
	plain, err := api.NewClient(&api.Config{Address: "http://" + a.Addr(), Token: a.ManagementToken()})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := plain.KV().Get("k", nil); err == nil {
		t.Error("plain HTTP answered; want HTTPS only")
	}
	a.Restart()
	if _, _, err := a.Client().KV().Get("k", nil); err != nil {
		t.Errorf("KV get after Restart: %v", err)
	}
}
