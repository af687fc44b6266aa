// Package topology holds the deployed operators of a Sluice cluster — what
// runs, with which settings — and the interface of the stores that keep
// it durably, so that every node converges on the same set and a
// restarted node picks it up.
//
// A [Topology] is versioned; every change is a check-and-set on the version
// ([Store.Swap]), so two concurrent changes cannot both win: the loser gets
// [ErrConflict]. Backends, each in its own package and each passing the
// conformance suite of topology/topologytest:
//
//   - topology/pebble: the node's own Pebble database, for the embedded
//     single-node mode;
//   - topology/consul: a Consul KV key per cluster, written with
//     check-and-set on its ModifyIndex and watched with blocking queries.
//
// [Guard] wraps a backend for a node: it keeps the last topology the node
// saw in a [LocalCopy] ([FileCopy] in the data directory), and when the
// store goes back to an older version (Consul lost its data) it never hands
// that version on, writes the last one back, reports it ([Regression]) and
// refuses changes based on the lost history ([RefusedError]).
//
// The package also holds the pure operations on a topology used by the
// control API and the nodes: [Topology.Deploy], [Topology.DeployAll],
// [Topology.Scale], [Topology.Kill] and [Topology.Seed], which keep the
// stream graph free of cycles ([CycleError]; [Topology.Cycles] finds those
// a topology stored by an older version may hold).
package topology
