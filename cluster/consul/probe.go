package consul

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/hashicorp/consul/api"
)

// AnonymousWrites reports whether the Consul agent of cfg lets a request
// without an ACL token write its key-value store, by writing (and then
// deleting) a key under "sluice-acl-probe/". Such an agent lets anyone who
// reaches it change a cluster's topology and membership, whatever the
// control API's tokens say: a node whose control API requires credentials
// warns when it is so (docs/security.md, "Consul").
func AnonymousWrites(ctx context.Context, cfg Config) (bool, error) {
	cfg = cfg.withDefaults()
	ac := cfg.apiConfig()
	client, err := api.NewClient(ac)
	if err != nil {
		return false, fmt.Errorf("consul: client for %s: %w", cfg.Address, err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	key := "sluice-acl-probe/" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	defer cancel()
	// As a stranger, whatever CONSUL_HTTP_TOKEN says: "anonymous" is the
	// secret of Consul's anonymous token (api.NewClient would fill an empty
	// token in from the environment).
	opts := (&api.WriteOptions{Token: "anonymous"}).WithContext(ctx)
	_, err = client.KV().Put(&api.KVPair{Key: key, Value: []byte("a write without a token")}, opts)
	switch {
	case isStatus(err, http.StatusForbidden):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("consul: probe %s for anonymous writes: %w", cfg.Address, err)
	}
	if _, err := client.KV().Delete(key, opts); err != nil {
		return true, fmt.Errorf("consul: delete the probe key %s: %w", key, err)
	}
	return true, nil
}
