package node

import (
	"errors"

	"github.com/sluicehq/sluice/actors/tail"
)

// Errors of Start and Run.
var (
	// ErrLaunchNeedsAuth is returned by Start for Config.Launch on a node
	// whose control API requires no authentication: a launcher runs what
	// deployers name, so only authenticated admins may deploy.
	ErrLaunchNeedsAuth = errors.New("node: Launch needs an authenticated control API")
	// ErrInsecureCluster is returned by Start for a cluster node (Consul
	// set) without node certificates (NodeSecurity.TLS) and without
	// NodeSecurity.Insecure: its actor port would take records, state and
	// membership messages (a spoofed "node n2 leaves") from anyone who
	// reaches it.
	ErrInsecureCluster = errors.New("node: a cluster node needs node certificates")
	// ErrNodeFailed is wrapped by Run's error when the node's state
	// database failed (a full disk, an I/O error) and the process must
	// restart.
	ErrNodeFailed = errors.New("node: node failed")
	// ErrSubscriptionClosed is returned by Subscription.Next once the
	// subscription is closed.
	ErrSubscriptionClosed = tail.ErrClosed
)
