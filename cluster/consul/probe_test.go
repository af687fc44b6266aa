package consul_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/cluster/consul"
	"github.com/sluicehq/sluice/internal/consultest"
)

// TestAnonymousWrites: a dev agent without ACLs takes a write without a
// token (so its KV store bypasses the control API's tokens); an agent
// whose ACLs deny by default does not, even when CONSUL_HTTP_TOKEN holds a
// token that could; the probe leaves no key behind.
func TestAnonymousWrites(t *testing.T) {
	open := consultest.Start(t)
	if anon, err := consul.AnonymousWrites(context.Background(), consul.Config{Address: open.Addr()}); err != nil || !anon {
		t.Fatalf("AnonymousWrites on an agent without ACLs = %v, %v; want true", anon, err)
	}
	keys, _, err := open.Client().KV().Keys("sluice-acl-probe/", "", nil)
	if err != nil || len(keys) != 0 {
		t.Fatalf("probe keys left behind: %v (%v)", keys, err)
	}
	locked := consultest.StartWith(t, consultest.Options{ACL: true})
	t.Setenv("CONSUL_HTTP_TOKEN", locked.ManagementToken())
	if anon, err := consul.AnonymousWrites(context.Background(), consul.Config{Address: locked.Addr()}); err != nil || anon {
		t.Fatalf("AnonymousWrites on an agent whose ACLs deny by default = %v, %v; want false", anon, err)
	}
}
