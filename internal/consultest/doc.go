// Package consultest runs real Consul agents for tests.
//
// [Start] launches "consul agent -dev" bound to 127.0.0.1, with every port
// it opens picked at run time and every port it can do without disabled
// (DNS, HTTPS, gRPC, serf WAN), so tests run in parallel on one machine.
// It waits until the agent has a leader and has registered itself in the
// catalog, and registers a cleanup that kills the agent's process group;
// the agent's log goes to a file in t.TempDir() whose tail is printed when
// the test fails.
//
//	agent := consultest.Start(t)
//	d, _ := consul.New(consul.Config{Address: agent.Addr()})
//	...
//	agent.Stop()    // Consul down
//	agent.Restart() // back on the same ports, with empty state (dev mode)
//
// [StartWith] adds security (Options): ACLs with default_policy "deny" and
// a generated management token (ManagementToken), and TLS: HTTPS only,
// with verify_incoming, certificates made with the creds package (TLS
// returns the CA and a client certificate; Env the CONSUL_* variables a
// client needs). Client is then authorised and authenticated.
//
// The binary is Consul v1.14.11 (never 1.15 or later: see [Binary]). It is
// taken from $SLUICE_CONSUL_BIN, else from the cache that scripts/ensure-tool.sh
// fills, else built by that script. A test that cannot find it fails; it
// never skips.
package consultest

import "github.com/sluicehq/sluice/internal/proctest"

// TB is the part of testing.TB that this package uses (proctest.TB).
type TB = proctest.TB
