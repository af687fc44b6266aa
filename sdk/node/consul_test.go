package node_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/consultest"
	"github.com/sluicehq/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/sdk"
	"github.com/sluicehq/sluice/sdk/node"
)

// TestNodeWarnsOfAConsulOpenToAnyone: a node whose control API requires
// tokens says, at start, that its Consul takes writes without a token
// (anyone could then change the topology and bypass the tokens), and says
// nothing of the kind when Consul's ACLs deny by default.
func TestNodeWarnsOfAConsulOpenToAnyone(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("admin:0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const warning = "INSECURE: Consul takes writes without a token"
	start := func(addr string) string {
		var logs sluicetest.Buffer
		rt, err := node.Start(context.Background(), node.Config{
			NodeConfig: node.NodeConfig{DataDir: t.TempDir(), NoSync: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))},
			Consul:     addr, HTTP: "127.0.0.1:0", Guarantee: sdk.AtLeastOnce, NodeSecurity: &node.NodeSecurity{Insecure: true}, ControlSecurity: &node.ControlSecurity{TokensFile: tokens}}, sink)
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		return logs.String()
	}
	if logs := start(consultest.Start(t).Addr()); !strings.Contains(logs, warning) || !strings.Contains(logs, "level=ERROR") {
		t.Fatalf("a node on a Consul without ACLs did not warn %q; logs:\n%s", warning, logs)
	}
	locked := consultest.StartWith(t, consultest.Options{ACL: true})
	t.Setenv("CONSUL_HTTP_TOKEN", locked.ManagementToken())
	if logs := start(locked.Addr()); strings.Contains(logs, warning) || strings.Contains(logs, "could not check") {
		t.Fatalf("a node on a Consul whose ACLs deny by default warned; logs:\n%s", logs)
	}
}
