// Package consul is the cluster.Discovery backend on the Consul catalog
// (github.com/hashicorp/consul/api), for multi-node deployments.
//
// # Registration
//
// Join registers the node with its local Consul agent as one instance of
// the cluster's service (Config.Service, default "sluice"):
//
//	service ID   <service>-<member ID>
//	address      Member.Address (host and port of the actor endpoint)
//	tags         Member.Kinds, sorted (so `consul catalog services -tags`
//	             and ?tag= queries show which node hosts which kinds)
//	meta         sluice_id, sluice_http (HTTPAddr), sluice_version,
//	             sluice_kinds (comma-joined Kinds), plus Member.Meta as is
//	check        <service ID>:ttl, a TTL check, passing at registration
//
// # Failure detection
//
// The check is a TTL check (default TTL 3s) that a heartbeat goroutine
// refreshes every HeartbeatInterval (default 1s). A node that stops
// heartbeating (SIGKILL, hang, partition from its agent) turns critical
// when its TTL runs out, 2-3s after its last heartbeat, and watchers drop
// it at once: they hold a blocking query on /v1/health/service/<service>,
// which returns on every health change, and keep only members whose
// checks all pass. Measured in this package's tests: 2.5-3.0s from SIGKILL
// to the snapshot without the node, against a budget of 5s.
//
// A node that reports itself unhealthy (SetHealth: a full disk) sends its
// heartbeats as warning, with the reason as the check's output: operators,
// ?passing queries and alerts see it failing, while watchers still count
// it (its own TTL check may warn; any other check must pass), so its
// instances are neither moved nor rolled back while it waits for room.
//
// Consul's own alternatives are slower: an HTTP or TCP check needs
// Interval+Timeout per failure and makes the agent reach into the node,
// and the critical-service reaper (DeregisterCriticalServiceAfter) runs
// once a minute. The reaper is still set (default 1m, Consul's minimum)
// so that a crashed node's entry leaves the catalog eventually; until then
// it is listed as critical and never in a snapshot.
//
// Costs: one small PUT per node per HeartbeatInterval to its local agent
// (the check output never changes, so no catalog write follows unless the
// status flips), and one long-poll per watcher.
//
// # Consul unavailable or restarted
//
// The heartbeat retries failures with jittered exponential backoff
// (RetryMin 200ms doubling to RetryMax 2s). When an update is answered
// "unknown check" (404) — the agent restarted and lost its state, or the
// service was deregistered or reaped — the node registers again at once,
// so membership converges within about RetryMax of Consul's return
// (measured: 0.7-1.3s).
//
// A watcher that cannot reach Consul sends nothing, so its last snapshot
// stays current: an outage never shows up as an empty membership. It
// retries with the same backoff; after a failure its next query does not
// block, because a restarted Consul starts over with lower indexes. For
// RecoveryGrace after it reaches Consul again (default TTL+RetryMax = 5s)
// it keeps the members of its last snapshot that Consul does not know at
// all, since they may not have re-registered yet; members Consul knows as
// critical are dropped at once, and new members appear at once. A node
// that died during the outage is therefore dropped RecoveryGrace after
// Consul's return.
//
// Join does not retry: when the agent is unreachable at start it fails
// within JoinTimeout (default 3s; at once on connection refused) with an
// error wrapping cluster.ErrUnavailable that names Config.Address.
//
// # Goroutines
//
// Join starts the heartbeat; each Watch starts one watcher. Leave stops
// all of them, waits for them, then deregisters; the end of the Join
// context stops the heartbeat and deregisters; the end of a Watch context
// stops that watcher and closes its channel.
package consul
