package node_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/creds"
	"github.com/sluicehq/sluice/creds/credstest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

func sink() sdk.Operator { return countingSink{} }

// TestLaunchNeedsAnAuthenticatedControlAPI: a node that would launch the
// executables of deployed operators refuses to start unless its control
// API requires credentials and its policy allows some executable.
func TestLaunchNeedsAnAuthenticatedControlAPI(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("admin:0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Consul is never reached: the settings are checked first.
	base := node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), Logger: sluicetest.Logger(t)}, Consul: "127.0.0.1:1", HTTP: "127.0.0.1:0", Launch: true, Guarantee: sdk.AtLeastOnce}
	for _, tc := range []struct {
		name   string
		change func(*node.Config)
		is     error
		want   string
	}{
		{"no authentication", func(c *node.Config) { c.ControlSecurity = &node.ControlSecurity{} }, node.ErrLaunchNeedsAuth, "-control-tokens-file"},
		{"no control API", func(c *node.Config) {
			c.HTTP, c.ControlSecurity = "", &node.ControlSecurity{TokensFile: tokens}
		}, node.ErrLaunchNeedsAuth, "must require tokens"},
		{"nothing allowed", func(c *node.Config) {
			c.ControlSecurity, c.LaunchPolicy = &node.ControlSecurity{TokensFile: tokens}, &node.LaunchPolicy{}
		}, nil, "no executable is allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.change(&cfg)
			rt, err := node.Start(context.Background(), cfg, sink)
			if err == nil {
				_ = rt.Stop(context.Background())
				t.Fatal("started")
			}
			if tc.is != nil && !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %v mentioning %q", err, tc.is, tc.want)
			}
		})
	}
}

// TestControlSecurityFromTheEnvironment: with Config.ControlSecurity nil,
// the SLUICE_CONTROL_* variables configure the control API.
func TestControlSecurityFromTheEnvironment(t *testing.T) {
	t.Setenv("SLUICE_CONTROL_TOKENS", "read:env-read-token-0123456789")
	rt, err := node.Start(context.Background(), node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: sluicetest.Logger(t)}, HTTP: "127.0.0.1:0"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Stop(context.Background())
	get := func(token string) int {
		req, _ := http.NewRequest("GET", "http://"+rt.HTTPAddr()+"/v1/operators", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(""); code != 401 {
		t.Fatalf("without the token: %d, want 401", code)
	}
	if code := get("env-read-token-0123456789"); code != 200 {
		t.Fatalf("with the token: %d, want 200", code)
	}
}

// TestNodeSecurityFromTheEnvironment: with Config.NodeSecurity nil, the
// SLUICE_NODE_* variables configure mutual TLS between nodes; the node
// checks them before it joins (Consul is never reached here).
func TestNodeSecurityFromTheEnvironment(t *testing.T) {
	ca := credstest.NewCA(t, "cluster CA")
	other := ca.Node(t, "other")
	t.Setenv("SLUICE_NODE_CA", other.CA)
	t.Setenv("SLUICE_NODE_CERT", other.Cert)
	t.Setenv("SLUICE_NODE_KEY", other.Key)
	if got := node.NodeSecurityFromEnv(); got.TLS.CAFile != other.CA || got.TLS.CertFile != other.Cert || got.TLS.KeyFile != other.Key {
		t.Fatalf("NodeSecurityFromEnv: got %+v", got.TLS)
	}
	cfg := node.Config{NodeConfig: node.NodeConfig{NodeID: "me", DataDir: t.TempDir(), Logger: sluicetest.Logger(t)}, Consul: "127.0.0.1:1", Guarantee: sdk.AtLeastOnce}
	_, err := node.Start(context.Background(), cfg, sink)
	if err == nil || !strings.Contains(err.Error(), `is named "other", but this node's id is "me"`) {
		t.Fatalf("a certificate of another node from the environment: got %v", err)
	}
	cfg.DataDir = t.TempDir()
	cfg.NodeSecurity = &node.NodeSecurity{TLS: creds.Config{CAFile: other.CA}}
	_, err = node.Start(context.Background(), cfg, sink)
	if err == nil || !strings.Contains(err.Error(), "-node-cert") {
		t.Fatalf("Config.NodeSecurity with a CA only: got %v, want the missing certificate named", err)
	}
}

// TestClusterNodeWithoutCertificatesIsRefused: a node joining a cluster
// without node certificates is refused, naming the flags, unless told
// -node-insecure (its actor port took records and a spoofed "n2 leaves"
// from anyone on the host, which wedged two nodes for 17 minutes).
func TestClusterNodeWithoutCertificatesIsRefused(t *testing.T) {
	for _, k := range []string{"SLUICE_NODE_CA", "SLUICE_NODE_CERT", "SLUICE_NODE_KEY", "SLUICE_NODE_INSECURE"} {
		t.Setenv(k, "")
	}
	// Consul is never reached: the refusal comes first.
	cfg := node.Config{NodeConfig: node.NodeConfig{DataDir: t.TempDir(), Logger: sluicetest.Logger(t)}, Consul: "127.0.0.1:1", Guarantee: sdk.AtLeastOnce}
	_, err := node.Start(context.Background(), cfg, sink)
	if !errors.Is(err, node.ErrInsecureCluster) || !strings.Contains(err.Error(), "-node-cert") || !strings.Contains(err.Error(), "-node-insecure") {
		t.Fatalf("a cluster node without certificates: %v, want ErrInsecureCluster naming -node-cert and -node-insecure", err)
	}
	t.Setenv("SLUICE_NODE_INSECURE", "1")
	if _, err := node.Start(context.Background(), cfg, sink); err == nil || errors.Is(err, node.ErrInsecureCluster) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("with SLUICE_NODE_INSECURE=1: %v, want it to go on and fail on the missing Consul", err)
	}
}
