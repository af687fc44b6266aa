package consul_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/topology"
	"github.com/sluicehq/sluice/topology/consul"
	"github.com/sluicehq/sluice/topology/topologytest"
)

// nodePolicy is the least-privilege ACL policy of the nodes of cluster,
// as docs/security.md gives it.
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

// secureStores returns a maker of empty stores, each in a cluster of its
// own with a token limited to nodePolicy(cluster), on an agent with
// default-deny ACLs (and TLS with client certificates if tls), reached
// through the standard CONSUL_* environment variables.
func secureStores(t *testing.T, tls bool) func(t *testing.T) *consul.Store {
	agent := consultest.StartWith(t, consultest.Options{ACL: true, TLS: tls})
	var n atomic.Int64
	return func(t *testing.T) *consul.Store {
		cluster := fmt.Sprintf("acl-%d", n.Add(1))
		for _, kv := range agent.Env() {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		t.Setenv("CONSUL_HTTP_TOKEN", agent.NewToken("sluice-"+cluster, nodePolicy(cluster)))
		// New reads the environment now; t.Setenv restores it after t.
		s, err := consul.New(agent.URL(), cluster, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// TestStoreACL runs the store suite with least-privilege tokens against
// an agent with default-deny ACLs, over plain HTTP and over HTTPS with
// client certificates.
func TestStoreACL(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			newStore := secureStores(t, tls)
			topologytest.RunStoreSuite(t, func(t *testing.T) topology.Store { return newStore(t) })
		})
	}
}

// TestStoreACLDenied: a token without key:write on the cluster's prefix
// (none, read only, or another cluster's policy) gets ErrPermissionDenied
// naming the permission and the key.
func TestStoreACLDenied(t *testing.T) {
	agent := consultest.StartWith(t, consultest.Options{ACL: true})
	const cluster = "prod"
	for name, tc := range map[string]struct {
		rules     string
		failsRead bool
	}{
		"no policy":     {"", true},
		"read only":     {`key_prefix "sluice/prod/" { policy = "read" }`, false},
		"other cluster": {nodePolicy("staging"), true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("CONSUL_HTTP_TOKEN", agent.NewToken(strings.ReplaceAll(name, " ", "-"), tc.rules))
			s, err := consul.New(agent.Addr(), cluster, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Swap(t.Context(), topology.Topology{Version: 1})
			want := "needs key:write on sluice/prod/topology"
			if tc.failsRead {
				want = "needs key:read on sluice/prod/topology"
			}
			if !errors.Is(err, consul.ErrPermissionDenied) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Permission denied") {
				t.Fatalf("Swap: %v; want ErrPermissionDenied containing %q", err, want)
			}
			t.Logf("Swap: %v", err)
		})
	}
	pair, _, err := agent.Client().KV().Get(consul.Key(cluster), nil)
	if err != nil || pair != nil {
		t.Errorf("%s after denied writes: %v, %v; want absent", consul.Key(cluster), pair, err)
	}
}
