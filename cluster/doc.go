// Package cluster defines how Sluice nodes find each other.
//
// A node is one Sluice process; it hosts operator instances and is
// described by a [Member]: a unique ID, the host:port its actors listen on
// (protoactor remote), its metrics/control HTTP address, the operator
// kinds it can host, its version and free-form metadata.
//
// Membership comes from a [Discovery] backend. Each node calls
// [Discovery.Join] once with its own Member, reads membership snapshots
// from [Discovery.Watch], and calls [Discovery.Leave] on shutdown:
//
//	d, err := consul.New(consul.DefaultConfig())
//	if err != nil { ... }
//	if err := d.Join(ctx, self); err != nil { ... } // fails fast if Consul is unreachable
//	defer d.Leave(context.Background())
//	for members := range d.Watch(ctx) { // sorted by ID, alive members only
//		rebalance(members) // e.g. reassign key groups
//	}
//
// A snapshot is the whole alive membership, sorted by Member.ID, with every
// Member in the canonical form of [Member.Normalize]. Snapshots are
// delivered latest-wins: a watcher that falls behind skips intermediate
// snapshots and receives the newest one, so a slow consumer never blocks
// the backend and the queue behind each channel holds at most one snapshot.
//
// Backends live in their own packages:
//
//   - cluster/consul: Consul catalog with TTL health checks; the production
//     backend for multi-node deployments.
//   - cluster/memdisc: an in-process registry for the embedded single-node
//     mode and for tests (several "nodes" in one process).
//
// Every backend passes the conformance suite in cluster/clustertest.
package cluster
