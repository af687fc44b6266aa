package consul_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/cluster/clustertest"
	"github.com/sluicehq/sluice/cluster/consul"
	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/sluicetest"
)

// nodePolicy is the least-privilege ACL policy of the nodes of cluster
// (whose catalog service has the cluster's name), as docs/security.md
// gives it.
func nodePolicy(cluster string) string {
	return fmt.Sprintf(`service %q {
  policy = "write"
}
key_prefix "sluice/%s/" {
  policy = "write"
}
node_prefix "" {
  policy = "read"
}
`, cluster, cluster)
}

// TestACLLeastPrivilege: against an agent with default-deny ACLs, a node
// whose token has only nodePolicy registers, keeps its TTL check passing
// and sees itself in Watch; Config.Token and CONSUL_HTTP_TOKEN both work.
func TestACLLeastPrivilege(t *testing.T) {
	agent := consultest.StartWith(t, consultest.Options{ACL: true})
	for _, how := range []string{"Config.Token", "CONSUL_HTTP_TOKEN"} {
		t.Run(how, func(t *testing.T) {
			service := newService()
			token := agent.NewToken("sluice-"+service, nodePolicy(service))
			cfg := consul.Config{Address: agent.Addr(), Service: service, Logger: testLogger(t)}
			if how == "Config.Token" {
				cfg.Token = token
			} else {
				t.Setenv("CONSUL_HTTP_TOKEN", token)
			}
			checkNodeWorks(t, agent, cfg)
		})
	}
}

// checkNodeWorks joins a node with cfg and checks that it is in the
// catalog with a passing TTL check for longer than two TTLs (so its
// heartbeats were accepted), and in its own Watch snapshot.
func checkNodeWorks(t *testing.T, agent *consultest.Agent, cfg consul.Config) {
	t.Helper()
	cfg.TTL, cfg.HeartbeatInterval, cfg.RetryMax = time.Second, 200*time.Millisecond, time.Second
	d, err := consul.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Leave(context.Background()); err != nil {
			t.Errorf("Leave: %v", err)
		}
	})
	joined := time.Now()
	join(t, d, clustertest.Member("node-1", 1))
	ch := d.Watch(t.Context())
	sluicetest.WaitFor(t, 10*time.Second, "the node in its own snapshot", func() bool {
		select {
		case snap := <-ch:
			return slices.ContainsFunc(snap, func(m cluster.Member) bool { return m.ID == "node-1" })
		default:
			return false
		}
	})
	// A TTL check that was not refreshed turns critical after TTL.
	sluicetest.WaitFor(t, 10*time.Second, "the TTL check passing after 2 TTLs", func() bool {
		if time.Since(joined) < 2*cfg.TTL {
			return false
		}
		checks, _, err := agent.Client().Health().Checks(cfg.Service, nil)
		return err == nil && len(checks) == 1 && checks[0].Status == api.HealthPassing
	})
	checks, _, err := agent.Client().Health().Checks(cfg.Service, nil)
	if err != nil || len(checks) != 1 || checks[0].Status != api.HealthPassing {
		t.Fatalf("checks of %s: %v, %v; want one passing", cfg.Service, checks, err)
	}
}

// TestACLDenied: a token without the node policy (none, or one for
// another cluster) is refused at Join with ErrPermissionDenied, naming the
// permission and the service, with Consul's own message.
func TestACLDenied(t *testing.T) {
	agent := consultest.StartWith(t, consultest.Options{ACL: true})
	service := newService()
	for name, token := range map[string]string{
		"no policy":     agent.NewToken("empty", ""),
		"other cluster": agent.NewToken("other", nodePolicy("other-cluster")),
		"no token":      "",
	} {
		t.Run(name, func(t *testing.T) {
			d, err := consul.New(consul.Config{Address: agent.Addr(), Service: service, Token: token, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Leave(context.Background())
			err = d.Join(t.Context(), clustertest.Member("node-1", 1))
			if !errors.Is(err, consul.ErrPermissionDenied) || errors.Is(err, cluster.ErrUnavailable) {
				t.Fatalf("Join: %v; want ErrPermissionDenied", err)
			}
			t.Logf("Join: %v", err)
			for _, want := range []string{fmt.Sprintf("needs service:write on service %q", service), "Permission denied", "CONSUL_HTTP_TOKEN"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Join error %q does not contain %q", err, want)
				}
			}
		})
	}
	services, _, err := agent.Client().Catalog().Services(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := services[service]; ok {
		t.Errorf("service %s registered with a denied token", service)
	}
}

// TestTLS: a node reaches an agent that serves HTTPS only and requires
// client certificates, with its ACL token, through the standard CONSUL_*
// variables (CONSUL_HTTP_ADDR's https:// in Config.Address, CONSUL_CACERT,
// CONSUL_CLIENT_CERT, CONSUL_CLIENT_KEY, CONSUL_HTTP_TOKEN); without the
// client certificate Join fails.
func TestTLS(t *testing.T) {
	agent := consultest.StartWith(t, consultest.Options{ACL: true, TLS: true})
	service := newService()
	token := agent.NewToken("sluice-"+service, nodePolicy(service))
	t.Run("no client certificate", func(t *testing.T) {
		t.Setenv("CONSUL_CACERT", agent.TLS().CA)
		t.Setenv("CONSUL_HTTP_TOKEN", token)
		d, err := consul.New(consul.Config{Address: agent.URL(), Service: service, JoinTimeout: 5 * time.Second, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Leave(context.Background())
		if err := d.Join(t.Context(), clustertest.Member("node-1", 1)); err == nil {
			t.Fatal("Join without a client certificate succeeded")
		} else {
			t.Logf("Join without a client certificate: %v", err)
		}
	})
	t.Run("CONSUL_ variables", func(t *testing.T) {
		for _, kv := range agent.Env() {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		t.Setenv("CONSUL_HTTP_TOKEN", token)
		checkNodeWorks(t, agent, consul.Config{Address: agent.URL(), Service: service, Logger: testLogger(t)})
	})
}

// lockedBuffer is a log sink safe for concurrent writes and reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestACLFilteredWarning: a token without node:read registers, but Consul
// silently leaves its members out of the health results; the watcher
// says which permission is missing.
func TestACLFilteredWarning(t *testing.T) {
	agent := consultest.StartWith(t, consultest.Options{ACL: true})
	service := newService()
	token := agent.NewToken("no-node-read", fmt.Sprintf(`service %q { policy = "write" }`, service))
	var logs lockedBuffer
	d, err := consul.New(consul.Config{Address: agent.Addr(), Service: service, Token: token,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Leave(context.Background()) })
	join(t, d, clustertest.Member("node-1", 1))
	_ = d.Watch(t.Context())
	sluicetest.WaitFor(t, 10*time.Second, "the ACL filtering warning", func() bool {
		return strings.Contains(logs.String(), "because of ACLs") && strings.Contains(logs.String(), "needs node:read")
	})
}
