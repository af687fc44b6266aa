package mesos_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/mesos/mesostest"
)

// authMaster is a master requiring HTTP framework authentication
// (--authenticate_http_frameworks) with one credential, sluice:s3cret.
func authMaster(t *testing.T) *env {
	return newEnvWith(t, mesostest.Config{
		Agents:      []mesostest.AgentSpec{{ID: "agent-1", CPUs: 4, Mem: 4096}},
		Credentials: map[string]string{"sluice": "s3cret"},
	})
}

// TestAuthenticatedFramework: with the right principal and secret the
// scheduler subscribes and launches, and every call it makes (SUBSCRIBE,
// ACCEPT, ACKNOWLEDGE, ...) carries the credentials: the master answers
// none with 401.
func TestAuthenticatedFramework(t *testing.T) {
	e := authMaster(t)
	cfg := e.config("s1")
	cfg.Principal, cfg.Secret = "sluice", "s3cret"
	e.start(cfg, shellPool("p", 2, "sleep 600", 3))
	callTypes := func() []scheduler.Call_Type {
		var types []scheduler.Call_Type
		for _, c := range e.master.Calls() {
			types = append(types, c.Type)
		}
		return types
	}
	e.waitMaster(waitTimeout, "2 running tasks, their updates acknowledged", func() bool {
		return len(e.running()) == 2 && slices.Contains(callTypes(), scheduler.Call_ACKNOWLEDGE)
	})
	if n := e.master.AuthFailures(); n != 0 {
		t.Errorf("the master answered %d calls 401", n)
	}
	types := callTypes()
	for _, want := range []scheduler.Call_Type{scheduler.Call_SUBSCRIBE, scheduler.Call_ACCEPT, scheduler.Call_ACKNOWLEDGE, scheduler.Call_RECONCILE} {
		if !slices.Contains(types, want) {
			t.Errorf("no authenticated %v call among %v", want, types)
		}
	}
}

// TestWrongSecret: a secret the master refuses (401) fails the
// subscription with an error naming the principal and pointing at
// --secret-file, without the secret; nothing is launched.
func TestWrongSecret(t *testing.T) {
	e := authMaster(t)
	cfg := e.config("s1")
	const secret = "not-the-s3cret"
	cfg.Principal, cfg.Secret = "sluice", secret
	s := e.start(cfg, shellPool("p", 1, "sleep 600", 3))
	var last string
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the refused credentials in the status", func() bool {
		last = s.Status().Subscription.LastError
		return s.Status().Subscription.Attempts >= 2 && strings.Contains(last, `refused the credentials of principal "sluice"`)
	})
	for _, want := range []string{"check the secret in --secret-file", "401", `Basic realm="mesos-master-scheduler"`, e.master.URL()} {
		if !strings.Contains(last, want) {
			t.Errorf("error %q does not contain %q", last, want)
		}
	}
	if strings.Contains(last, secret) {
		t.Errorf("error %q contains the secret", last)
	}
	if len(e.master.Tasks()) != 0 || len(e.master.Frameworks()) != 0 {
		t.Errorf("tasks %v, frameworks %v without valid credentials", e.master.Tasks(), e.master.Frameworks())
	}
}

// TestNoCredentials: a scheduler without principal against a master that
// requires authentication says so and what to set.
func TestNoCredentials(t *testing.T) {
	e := authMaster(t)
	s := e.start(e.config("s1"), shellPool("p", 1, "sleep 600", 3))
	var last string
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the missing credentials in the status", func() bool {
		last = s.Status().Subscription.LastError
		return strings.Contains(last, "requires framework authentication")
	})
	if want := "set --principal and --secret-file"; !strings.Contains(last, want) {
		t.Errorf("error %q does not contain %q", last, want)
	}
	if pending := pending(s.Status()); len(pending) != 1 || !strings.Contains(pending[0], "requires framework authentication") {
		t.Errorf("pending reasons = %q, want the authentication error", pending)
	}
	if len(e.master.Frameworks()) != 0 {
		t.Errorf("frameworks %v without credentials", e.master.Frameworks())
	}
}

// TestConsulTLSAndACL: the scheduler reaches a Consul agent that serves
// HTTPS only, requires client certificates and denies requests without a
// token, through the standard CONSUL_* variables (which it ignored when
// its transport already had a TLS configuration).
func TestConsulTLSAndACL(t *testing.T) {
	e := newEnvSecure(t, mesostest.Config{Agents: []mesostest.AgentSpec{{ID: "agent-1", CPUs: 2, Mem: 1024}}},
		consultest.Options{ACL: true, TLS: true})
	for _, kv := range e.consul.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("CONSUL_HTTP_TOKEN", e.consul.ManagementToken())
	cfg := e.config("s1")
	cfg.Consul = e.consul.URL()
	s := e.start(cfg, shellPool("p", 1, "sleep 600", 3))
	e.waitMaster(waitTimeout, "the task running", func() bool { return len(e.running()) == 1 })
	sluicetest.WaitEvery(t, waitTimeout, 20*time.Millisecond, "the status in Consul", func() bool {
		st, err := e.readStatus()
		return err == nil && st.Role == s.Status().Role && len(st.Tasks) == 1
	})
}
