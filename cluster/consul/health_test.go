package consul_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/cluster/clustertest"
	"github.com/sluicehq/sluice/cluster/consul"
	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/sluicetest"
)

// A member that reports itself unhealthy (a full disk) keeps its
// registration and its place in the other members' view, but its check
// turns to warning with the reason as output (Consul's ?passing filter
// drops it), until it reports itself healthy again.
func TestSetHealth(t *testing.T) {
	agent := consultest.Start(t)
	service := newService()
	a, b := newNode(t, agent.Addr(), service), newNode(t, agent.Addr(), service)
	join(t, a, clustertest.Member("a", 1))
	join(t, b, clustertest.Member("b", 2))
	w := clustertest.Watch(t, "b", b)
	w.WaitIDs(t, clustertest.Timeout, "a", "b")

	check := func() *api.HealthCheck {
		checks, _, err := agent.Client().Health().Checks(service, nil)
		if err != nil {
			t.Fatalf("Health().Checks(%s): %v", service, err)
		}
		for _, c := range checks {
			if c.CheckID == service+"-a:ttl" {
				return c
			}
		}
		t.Fatalf("no check %s-a:ttl among %d", service, len(checks))
		return nil
	}
	const reason = "disk full: 1.0 MiB free of 64 MiB on /data"
	a.SetHealth(reason)
	sluicetest.WaitFor(t, clustertest.Timeout, "check warning with the reason", func() bool {
		c := check()
		return c.Status == api.HealthWarning && strings.Contains(c.Output, reason)
	})
	// Heartbeats go on publishing the reason: still failing after a TTL,
	// and a still a member all along.
	deadline := time.Now().Add(consul.DefaultTTL)
	for time.Now().Before(deadline) {
		if c := check(); c.Status != api.HealthWarning || !strings.Contains(c.Output, reason) {
			t.Fatalf("check turned %s (%q) while the node was unhealthy", c.Status, c.Output)
		}
		time.Sleep(100 * time.Millisecond) // sampling a condition that must hold
	}
	for _, snap := range w.History() {
		if ids := clustertest.IDs(snap.Members); !slices.Contains(ids, "a") {
			t.Fatalf("b's view while a was unhealthy: %v, want a in it", ids)
		}
	}
	passing, _, err := agent.Client().Health().Service(service, "", true, nil)
	if err != nil || len(passing) != 1 {
		t.Fatalf("Consul's ?passing while a is unhealthy: %d entries (%v), want b alone", len(passing), err)
	}

	a.SetHealth("")
	sluicetest.WaitFor(t, clustertest.Timeout, "check passing again", func() bool { return check().Status == api.HealthPassing })
	w.WaitIDs(t, clustertest.Timeout, "a", "b")
}
